"""A run only the store holds (its trace ingested from elsewhere and gone since, or pulled from
a lake) replays from the store a window of turns at a time, never read whole."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import tracemalloc
from pathlib import Path

import pytest

from tests.engine.engine_support import THREE_TURNS, Project
from tests.support.big_traces import long_agent_run
from traces.store import TraceStore
from workbench.cli import main
from workbench.engine.mcp_server.handlers import Workbench
from workbench.engine.recording.replay.stored import stored_source
from workbench.engine.recording.replay.streamed import streamed_source
from workbench.engine.recording.replay.verify import replay_run


def test_mcp_replays_a_long_run_of_the_store_in_the_memory_of_a_short_one(
    tmp_path: Path,
) -> None:
    """mcp-serve's replay_run of a run whose trace is not in the home reads the store: a run
    four times as long replays identically in a tenth of its extra bytes more, where read
    whole it took some ten times its bytes."""
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    sizes: dict[str, int] = {}
    for turns in (120, 480):
        path = long_agent_run(elsewhere, f"{turns:032d}", turns, 20, context_window=2000)
        sizes[path.stem] = path.stat().st_size
    with TraceStore.for_home(home) as store:
        store.ingest([elsewhere])
    for path in elsewhere.glob("*.jsonl"):
        path.unlink()  # the store alone holds the runs now
    workbench = Workbench(home)

    def replayed(run_id: str) -> dict[str, object]:
        return asyncio.run(workbench.call("replay_run", {"run": run_id}))

    peaks: dict[str, int] = {}
    replayed(f"{120:032d}")  # imports and caches, unmeasured
    for run_id in sizes:
        tracemalloc.start()
        try:
            outcome = replayed(run_id)
            peaks[run_id] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert outcome["status"] == "identical", outcome
        assert outcome["turns_replayed"] == int(run_id)
        assert outcome["events_compared"] == outcome["events_recorded"]
    short, long = (f"{turns:032d}" for turns in (120, 480))
    assert peaks[long] - peaks[short] < (sizes[long] - sizes[short]) / 10, (peaks, sizes)


@pytest.mark.parametrize("shape", ["identical", "diverged", "killed"])
async def test_a_run_replays_from_the_store_as_from_its_trace(project: Project, shape: str) -> None:
    """The store's pages give the outcome the trace gives: identical, diverged at the same
    field, or identical up to where a killed run stops."""
    path, _ = await project.record(THREE_TURNS)
    lines = path.read_text().splitlines()
    if shape == "diverged":
        events = [json.loads(line) for line in lines]
        end = next(e for e in events if e["type"] == "tool_end")
        end["result"] = "something else"
        lines = [json.dumps(e) for e in events]
    elif shape == "killed":
        lines = lines[: len(lines) * 2 // 3]
    path.write_text("".join(line + "\n" for line in lines))
    with TraceStore.for_home(project.home) as store:
        store.ingest_home(project.home)

    stored = stored_source(lambda: TraceStore.for_home(project.home), path.stem)
    from_store = (await replay_run(stored)).to_json()
    from_trace = (await replay_run(streamed_source(path))).to_json()
    for outcome in (from_trace, from_store):
        del outcome["wall_s"]
    assert from_store == from_trace
    assert from_trace["status"] == {"killed": "incomplete"}.get(shape, shape)


@pytest.mark.parametrize("shape", ["identical", "diverged"])
def test_workbench_replay_of_a_run_whose_trace_is_gone_reads_the_store(
    project: Project, shape: str
) -> None:
    """`workbench replay RUN` of a run the store holds, its trace file removed since, gives
    the outcome a replay of the trace gave, where it stopped at the missing file."""
    path, _ = asyncio.run(project.record(THREE_TURNS))
    if shape == "diverged":
        events = [json.loads(line) for line in path.read_text().splitlines()]
        end = next(e for e in events if e["type"] == "tool_end")
        end["result"] = "something else"
        path.write_text("".join(json.dumps(e) + "\n" for e in events))
    with TraceStore.for_home(project.home) as store:
        store.ingest_home(project.home)
    home = str(project.home)
    from_trace = _replayed("--home", home, "replay", str(path), "--json")
    path.unlink()  # the store alone holds the run now
    from_store = _replayed("--home", home, "replay", path.stem[:8], "--json")
    assert from_store == from_trace
    assert from_trace["status"] == shape and from_trace["exit"] == (shape == "diverged")


def _replayed(*argv: str) -> dict[str, object]:
    """The `--json` outcome of `workbench replay`, its exit code in it, its time left out."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    assert err.getvalue() == "", err.getvalue()
    outcome: dict[str, object] = json.loads(out.getvalue())
    del outcome["wall_s"]
    return outcome | {"exit": code}
