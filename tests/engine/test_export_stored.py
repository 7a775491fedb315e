"""Exporting a stored run (`export_stored`: the TUI's export) writes the very document
`export_run` makes of the whole recording, reading the store a window of turns (JSON: a
page of events) at a time, and tells how far it is as it goes."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from tests.support.generated_runs import CountingStore, varied_run
from tests.support.golden import golden_traces_in
from traces.reader import read_trace
from traces.store import TraceStore
from workbench.cli import main
from workbench.engine.views import export
from workbench.engine.views.export import (
    EXPORT_FORMATS,
    EXPORT_TURNS,
    ExportError,
    ExportFormat,
    export_run,
    export_stored,
)

LONG_TURNS = 2 * EXPORT_TURNS + 50  # three windows of turns


def _home(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    return home, home / "traces"


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
def test_stored_exports_of_recorded_runs_are_their_documents(
    tmp_path: Path, fmt: ExportFormat
) -> None:
    home, folder = _home(tmp_path)
    golden_traces_in(folder)
    varied_run(folder, "5" * 32, 7)
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        counting = CountingStore(store)
        for trace in folder.glob("*.jsonl"):
            path = export_stored(counting.session, trace.stem, fmt, home)
            assert path == home / "exports" / f"{trace.stem}.{fmt}"
            whole = export_run(list(read_trace(trace).events), fmt)
            assert path.read_text(encoding="utf-8") == whole
    assert sorted(p.name for p in (home / "exports").iterdir()) == sorted(
        f"{trace.stem}.{fmt}" for trace in folder.glob("*.jsonl")
    )  # and nothing half written beside them


@pytest.mark.parametrize(
    ("ended", "killed"),
    [(True, False), (False, False), (False, True)],
    ids=["ended", "cut off before run_end", "killed mid-stream"],
)
def test_a_long_run_is_exported_a_window_at_a_time(
    tmp_path: Path, ended: bool, killed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export, "EXPORT_EVENTS", 2_000)  # pages of a few thousand events
    home, folder = _home(tmp_path)
    run_id = "6" * 32
    varied_run(folder, run_id, LONG_TURNS, ended=ended, killed=killed, rounds_kept=2)
    events = list(read_trace(folder / f"{run_id}.jsonl").events)
    assert len(events) > export.EXPORT_EVENTS  # JSON is paged too
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        for fmt in EXPORT_FORMATS:
            told: list[tuple[int, int]] = []
            counting = CountingStore(store)
            path = export_stored(
                counting.session, run_id, fmt, home, lambda *n, told=told: told.append(n)
            )
            assert path.read_text(encoding="utf-8") == export_run(events, fmt)
            total = len(events) if fmt == "json" else LONG_TURNS
            assert told[0] == (0, total) and told[-1] == (total, total)
            assert told == sorted(told) and len(told) > 2  # as it goes
    text = (home / "exports" / f"{run_id}.md").read_text(encoding="utf-8")
    assert text.count("\n## Turn ") == LONG_TURNS


def test_a_run_the_store_does_not_hold_is_not_exported(tmp_path: Path) -> None:
    home, _ = _home(tmp_path)
    with TraceStore.for_home(home) as store, pytest.raises(ExportError, match="no events"):
        export_stored(CountingStore(store).session, "9" * 32, "md", home)
    assert not (home / "exports").exists() or not any((home / "exports").iterdir())


def test_workbench_export_writes_a_long_run_from_the_store_as_it_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`workbench export RUN -o FILE` of a run of the home: the document of the whole run,
    read a window at a time, so a run three times as long takes about the same memory
    (read whole, three times as much); on stdout the same document. Windows of 50 turns
    and 200 events here, for runs of 200 and 600 turns."""
    monkeypatch.setattr(export, "EXPORT_TURNS", 50)
    monkeypatch.setattr(export, "EXPORT_EVENTS", 200)
    home, folder = _home(tmp_path)
    lengths = {"6" * 32: 200, "7" * 32: 600}
    for run_id, turns in lengths.items():
        varied_run(folder, run_id, turns, rounds_kept=2)
    for fmt in EXPORT_FORMATS:
        peaks: list[int] = []
        for run_id in lengths:
            args = ["export", run_id[:8], "--format", fmt, "--home", str(home)]
            written = tmp_path / f"{run_id[0]}.{fmt}"
            assert main([*args, "-o", str(written)]) == 0  # ingest, imports, caches
            tracemalloc.start()
            try:
                assert main([*args, "-o", str(written)]) == 0
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
            whole = export_run(list(read_trace(folder / f"{run_id}.jsonl").events), fmt)
            assert written.read_text(encoding="utf-8") == whole
        assert peaks[1] < 1.5 * peaks[0], (fmt, peaks)
        capsys.readouterr()
        assert main(args) == 0
        assert capsys.readouterr().out == whole
    # Each written whole under its name, nothing left beside.
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["6.html", "6.json", "6.md", "7.html", "7.json", "7.md", "home"]


def test_events_not_stored_as_the_models_write_them_are_exported_as_the_models_read_them(
    tmp_path: Path,
) -> None:
    """DuckDB formats the events stored as the models write them; any other line (written
    by another tool: fields left out or in another order, an integer where a float goes, a
    time with an offset, numbers and escapes DuckDB writes otherwise) is read into its
    model, so the document is the one `export_run` makes all the same."""
    home, folder = _home(tmp_path)
    run_id = "8" * 32
    varied_run(folder, run_id, 4)
    path = folder / f"{run_id}.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    edits = {
        "model_request": lambda e: {k: v for k, v in reversed(e.items()) if k != "attempt"},
        "model_chunk": lambda e: e | {"elapsed_ms": 1e-05, "data": {"big": 10**20, "z": -0.0}},
        "model_response": lambda e: e | {"latency_ms": 7, "usage": {"x": 1.5e16, "y": 2e-7}},
        "tool_start": lambda e: e | {"ts": e["ts"].replace("Z", "+00:00")},
        "tool_end": lambda e: e | {"result": "\x1b[31mred\x1b[0m \x7f é \u2028"},
    }
    edited = [edits[e["type"]](e) if e["type"] in edits and e["seq"] % 3 else e for e in lines]
    path.write_text(
        "".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in edited),
        encoding="utf-8",
    )
    read = read_trace(path)
    assert not read.problems
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        written = export_stored(CountingStore(store).session, run_id, "json", home)
    assert written.read_text(encoding="utf-8") == export_run(list(read.events), "json")
