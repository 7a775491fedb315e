"""Two whole runs compared from the store a window of turns at a time (`workbench diff`,
mcp-serve's diff_runs) compare as they do read whole: the same rows, first divergence, end
statuses, texts and fork edits, whatever the window; and a run of 16,000 events is compared
without its events in memory."""

from __future__ import annotations

import asyncio
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from tests.support.generated_runs import stored_home
from traces.store import TraceStore
from workbench.cli import main
from workbench.engine.diff.text_changes import compare_runs, compare_stored_runs
from workbench.engine.mcp_server.handlers import Workbench
from workbench.engine.recording.runs.load import read_recording_file

SHORT, LONGER, KILLED, SAME, IDS = ("a" * 32, "b" * 32, "c" * 32, "d" * 32, "e" * 32)


@pytest.mark.parametrize("size", [1, 3, 100])
def test_runs_compare_from_the_store_as_read_whole(tmp_path: Path, size: int) -> None:
    home = stored_home(
        tmp_path / "home",
        {
            SHORT: {"turns": 7},
            LONGER: {"turns": 11},  # turns 8 to 11 only in B; turn 7 answers in A only
            KILLED: {"turns": 7, "killed": True},
            SAME: {"turns": 7},
            IDS: {"turns": 7, "reuse_ids": False, "rounds_kept": 1},
        },
    )
    recorded = {
        run_id: read_recording_file(home / "traces" / f"{run_id}.jsonl")
        for run_id in (SHORT, LONGER, KILLED, SAME, IDS)
    }
    pairs = [(SHORT, LONGER), (LONGER, SHORT), (SHORT, KILLED), (SHORT, SAME), (IDS, LONGER)]
    with TraceStore.for_home(home) as store:
        for a, b in pairs:
            whole = compare_runs(recorded[a], recorded[b])
            assert compare_stored_runs(store, a, b, size) == whole, (a[0], b[0])
    # What the pairs hold: a divergence marked once, an equal pair, ends that differ.
    assert compare_runs(recorded[SHORT], recorded[LONGER]).diff.first_divergence == 7
    assert compare_runs(recorded[SHORT], recorded[SAME]).diff.is_equal
    killed = compare_runs(recorded[SHORT], recorded[KILLED]).diff
    assert (killed.status_a, killed.status_b) == ("completed", "incomplete")


@pytest.mark.parametrize("front", ["cli", "mcp"])
def test_the_chains_of_a_long_run_are_compared_without_its_events_in_memory(
    tmp_path: Path, front: str, capsys: pytest.CaptureFixture[str]
) -> None:
    long, longer = "3" * 32, "4" * 32
    shape = {"reuse_ids": False, "rounds_kept": 2}
    home = stored_home(tmp_path / "home", {SHORT: {"turns": 8}, long: {"turns": 2000, **shape}})
    home_of_two = stored_home(
        tmp_path / "two" / "home", {SHORT: {"turns": 8}, longer: {"turns": 9, **shape}}
    )
    peaks: dict[str, int] = {}
    for run_id, where in ((longer, home_of_two), (long, home)):

        def diffed(run_id: str = run_id, where: Path = where) -> Any:
            if front == "mcp":
                arguments = {"run_a": run_id, "run_b": SHORT, "what": "chain"}
                return asyncio.run(Workbench(where).call("diff_runs", arguments))
            capsys.readouterr()
            args = ["diff", run_id, SHORT, "--chain", "--home", str(where)]
            assert main(args) == 1, capsys.readouterr().err
            return capsys.readouterr().out.splitlines()

        diffed()  # imports and caches, before the measured one
        tracemalloc.start()
        try:
            answer = diffed()
            peaks[run_id] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        # Turn 8 answers in the short run and calls a tool in the other.
        if front == "mcp":
            assert answer["equal"] is False and answer["chain"]["first_divergence_turn"] == 8
        else:
            assert "first divergence at turn 8" in answer
            assert "   end: A completed | B completed" in answer
    # The rows of 2,000 turns, not the 16,000 events: read whole, the run took some ten times
    # its trace file's bytes.
    assert peaks[long] < 3 * (home / "traces" / f"{long}.jsonl").stat().st_size, peaks
