"""Ingest into the real DuckDB store: incremental, idempotent, and every bad input reported
as `file:line: reason` while every valid event is kept."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.generated_runs import small_run
from traces.events import RunEnd, RunStart
from traces.recorder import Recorder
from traces.redact import Redactor
from traces.store import AmbiguousRunError, TraceStore, UnknownRunError
from traces.writer import JsonlWriter


@pytest.fixture
def store(tmp_path: Path) -> Iterator[TraceStore]:
    with TraceStore.open(tmp_path / "db" / "w.duckdb") as opened:
        yield opened


def test_ingest_is_idempotent_and_incremental(store: TraceStore, tmp_path: Path) -> None:
    path = small_run(tmp_path / "t", "run-a", turns=2, end=False)
    first = store.ingest([path])
    assert (first.files, first.new_events, first.new_runs) == (1, 7, 1)
    assert store.run("run-a").status == "incomplete"
    assert store.ingest([path]).new_events == 0  # nothing changed: nothing added
    lines = path.read_text().splitlines()
    end = json.loads(lines[-1]) | {"seq": len(lines), "type": "run_end", "turn": None}
    end = {k: end[k] for k in ("run_id", "seq", "ts", "turn", "type")} | {"status": "completed"}
    with path.open("a") as handle:
        handle.write(json.dumps(end) + "\n")
    grown = store.ingest([path])
    assert (grown.new_events, grown.new_runs, grown.problems) == (1, 0, [])
    assert store.run("run-a").status == "completed"
    assert store.count_events("run-a") == 8
    assert [e.seq for e in store.events("run-a")] == list(range(8))
    assert [e.seq for e in store.events("run-a", offset=2, limit=3)] == [2, 3, 4]
    assert {e.type for e in store.events("run-a", types=["tool_end"])} == {"tool_end"}


def test_store_keeps_each_line_exactly(store: TraceStore, tmp_path: Path) -> None:
    path = small_run(tmp_path, "run-x")
    store.ingest([path])
    _, rows = store.query("SELECT event FROM events WHERE run_id = ? ORDER BY seq", ["run-x"])
    assert [row[0] for row in rows] == path.read_text().splitlines()


def test_empty_file(store: TraceStore, tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    report = store.ingest([path])
    assert report.problems == [f"{path}: empty trace, no events to ingest"]
    assert store.count_runs() == 0


def test_garbage_file_reports_each_line(store: TraceStore, tmp_path: Path) -> None:
    path = tmp_path / "garbage.jsonl"
    path.write_text("hello\n\x00\x01 binary?\n[1, 2]\n")
    report = store.ingest([path])
    assert report.problems == [
        f"{path}:1: not valid JSON",
        f"{path}:2: not valid JSON",
        f"{path}:3: not a JSON object",
    ]
    assert report.new_events == 0


def test_truncated_last_line_is_picked_up_once_complete(store: TraceStore, tmp_path: Path) -> None:
    source = small_run(tmp_path / "src", "run-t")
    text = source.read_text()
    cut = len(text) - 25
    path = tmp_path / "run-t.jsonl"
    path.write_text(text[:cut])
    report = store.ingest([path])
    lines = text.count("\n")
    assert report.problems == [
        f"{path}:{lines}: last line is cut off (the run may still be "
        "writing); it is read once complete"
    ]
    assert report.new_events == lines - 1 and store.run("run-t").status == "incomplete"
    assert store.ingest([path]).problems == []  # unchanged: not re-reported
    path.write_text(text)
    done = store.ingest([path])
    assert (done.new_events, done.problems) == (1, [])
    assert store.run("run-t").status == "completed"


def test_unknown_type_and_missing_field_keep_the_rest(store: TraceStore, tmp_path: Path) -> None:
    path = small_run(tmp_path, "run-u")
    lines = path.read_text().splitlines()
    lines[2] = json.dumps(json.loads(lines[2]) | {"type": "telepathy"})
    broken = json.loads(lines[3])
    del broken["call_id"]
    lines[3] = json.dumps(broken)
    path.write_text("\n".join(lines) + "\n")
    report = store.ingest([path])
    assert report.problems == [
        f"{path}:3: unknown event type 'telepathy'",
        f"{path}:4: missing field 'call_id'",
    ]
    assert report.new_events == len(lines) - 2


def test_blank_line_keeps_line_numbers_exact(store: TraceStore, tmp_path: Path) -> None:
    path = small_run(tmp_path, "run-b")
    lines = path.read_text().splitlines()
    lines[3] = "{not json"
    path.write_text("\n".join([*lines[:2], "", *lines[2:]]) + "\n")
    assert store.ingest([path]).problems == [f"{path}:5: not valid JSON"]


def test_newer_schema_version_is_refused_naming_it(store: TraceStore, tmp_path: Path) -> None:
    path = small_run(tmp_path, "run-n")
    lines = path.read_text().splitlines()
    lines[0] = json.dumps(json.loads(lines[0]) | {"schema_version": 9})
    path.write_text("\n".join(lines) + "\n")
    report = store.ingest([path])
    assert len(report.problems) == 1
    assert report.problems[0].startswith(f"{path}:1: schema_version 9 is newer")
    assert store.count_runs() == 0 and report.new_events == 0


def test_duplicate_seq_keeps_the_first(store: TraceStore, tmp_path: Path) -> None:
    path = small_run(tmp_path, "run-d")
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines[:4], lines[3], *lines[4:]]) + "\n")
    report = store.ingest([path])
    assert len(report.problems) == 1 and report.problems[0].startswith(
        f"{path}:5: duplicate seq 3 of run run-d"
    )
    assert [e.seq for e in store.events("run-d")] == list(range(len(lines)))


def test_two_files_with_the_same_run_id(store: TraceStore, tmp_path: Path) -> None:
    first = small_run(tmp_path / "a", "run-s")
    copy = tmp_path / "b" / "copy.jsonl"
    copy.parent.mkdir()
    shutil.copy(first, copy)
    report = store.ingest([tmp_path / "a", tmp_path / "b"])
    assert report.problems == [f"{copy}:1: run run-s is already ingested from {first}; skipped"]
    assert store.count_events("run-s") == len(first.read_text().splitlines())


def test_folder_without_traces_and_missing_path(store: TraceStore, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    report = store.ingest([tmp_path / "empty", tmp_path / "nope"])
    assert report.problems == [
        f"{tmp_path / 'empty'}: no .jsonl traces in this folder",
        f"{tmp_path / 'nope'}: no such file or folder",
    ]


def test_run_prefix_resolution(store: TraceStore, tmp_path: Path) -> None:
    for run_id in ("abc111", "abc222", "xyz999"):
        small_run(tmp_path, run_id)
    store.ingest([tmp_path])
    assert store.resolve_run("xy") == "xyz999"
    with pytest.raises(AmbiguousRunError, match="abc"):
        store.resolve_run("abc")
    with pytest.raises(UnknownRunError, match="workbench runs"):
        store.resolve_run("nope")
    assert [r.run_id for r in store.runs(text="xyz")] == ["xyz999"]


def test_views_pair_tool_calls_and_list_schemas(store: TraceStore, golden_dir: Path) -> None:
    store.ingest([golden_dir])
    _, rows = store.query("SELECT status, count(*) FROM tool_calls GROUP BY 1 ORDER BY 1")
    assert dict(rows) == {"error": 3, "ok": 11}
    _, rows = store.query("SELECT count(*) FROM model_calls")
    assert rows[0][0] > 0
    run_id = store.runs(status="completed")[0].run_id
    names = [t["function"]["name"] for t in store.tool_schemas(run_id)]
    assert names == ["read_file", "list_dir", "calculator", "get_current_time"]


def test_secrets_reach_neither_the_file_nor_the_store(store: TraceStore, tmp_path: Path) -> None:
    secret = "sk-test-0123456789abcdef"
    writer = JsonlWriter(tmp_path, "run-r", Redactor(secrets=[secret]))
    rec = Recorder("run-r", [writer])
    rec.emit(
        RunStart,
        turn=None,
        task=f"use key {secret}",
        model="m",
        params={"headers": {"Authorization": f"Bearer {secret}"}},
    )
    rec.emit(RunEnd, turn=None, status="completed")
    rec.close()
    assert secret not in writer.path.read_text()
    store.ingest([writer.path])
    _, rows = store.query("SELECT event FROM events")
    assert rows and all(secret not in row[0] for row in rows)
    assert "[REDACTED:api_key]" in (store.run("run-r").task or "")


@pytest.mark.parametrize("key", ["store_version", "schema_version"])
def test_a_store_filled_under_another_layout_or_schema_is_rebuilt(tmp_path: Path, key: str) -> None:
    path = small_run(tmp_path / "t", "run-a")
    db = tmp_path / "db" / "w.duckdb"
    with TraceStore.open(db) as store:
        store.ingest([path])
        store.query("UPDATE store_meta SET value = '0' WHERE key = ?", [key])
    with TraceStore.open(db) as store:
        _, rows = store.query("SELECT count(*) FROM runs")
        assert rows == [(0,)]  # rows from another schema would not load: start over
        assert store.ingest([path]).new_runs == 1
        assert store.run("run-a").status == "completed"
