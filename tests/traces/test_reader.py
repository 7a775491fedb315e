"""The streaming reader: bad lines reported by file and line, the rest still read."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from tests.support.big_traces import MIB
from tests.support.generated_runs import run_with_big_result
from traces import versions
from traces.line_check import LINE_MAX
from traces.reader import iter_trace, read_trace
from traces.versions import NewerSchemaError


def _lines(golden_dir: Path, status_hint: str = "") -> list[str]:
    path = sorted(golden_dir.glob("*.jsonl"))[0]
    return path.read_text(encoding="utf-8").splitlines()


def test_truncated_last_line_is_skipped_silently(golden_dir: Path, tmp_path: Path) -> None:
    lines = _lines(golden_dir)
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines[:5]) + "\n" + lines[5][:30], encoding="utf-8")
    result = read_trace(path)
    assert len(result.events) == 5 and result.problems == [] and result.truncated_tail


def test_bad_lines_are_reported_with_file_and_line(golden_dir: Path, tmp_path: Path) -> None:
    lines = _lines(golden_dir)
    unknown = json.loads(lines[2]) | {"type": "telepathy"}
    path = tmp_path / "t.jsonl"
    path.write_text(
        "\n".join([lines[0], "garbage{", json.dumps(unknown), lines[1], lines[1]]) + "\n"
    )
    result = read_trace(path)
    assert [e.seq for e in result.events] == [0, 1]
    assert result.problems == [
        f"{path}:2: not valid JSON",
        f"{path}:3: unknown event type 'telepathy'",
        f"{path}:5: duplicate seq 1",
    ]


def test_newer_schema_is_refused_naming_the_version(golden_dir: Path, tmp_path: Path) -> None:
    first = json.loads(_lines(golden_dir)[0]) | {"schema_version": 7}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(first) + "\n")
    with pytest.raises(NewerSchemaError, match="schema_version 7"):
        read_trace(path)


def test_older_schema_goes_through_the_migration_hook(
    golden_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [json.loads(line) for line in _lines(golden_dir)[:3]]
    lines[0]["schema_version"] = 0
    lines[0]["task_text"] = lines[0].pop("task")  # what a "v0" might have called it

    def v0_to_v1(record: dict) -> dict:
        if "task_text" in record:
            record = dict(record)
            record["task"] = record.pop("task_text")
        if record.get("type") == "run_start":
            record["schema_version"] = 1
        return record

    monkeypatch.setitem(versions.MIGRATIONS, 0, v0_to_v1)
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    problems: list[str] = []
    events = list(iter_trace(path, problems))
    assert problems == [] and len(events) == 3
    assert events[0].type == "run_start" and events[0].task


def test_a_line_over_the_limit_is_one_problem_and_is_never_held(tmp_path: Path) -> None:
    # The store skips such a line (tests/store/test_ingest_real_size.py); the reader did
    # not, and held it twice over (bytes, then text) before it validated it.
    path = run_with_big_result(tmp_path, "too-big", LINE_MAX + 8 * MIB)
    size = len(path.read_bytes().splitlines()[2])
    tracemalloc.start()
    try:
        result = read_trace(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.problems == [
        f"{path}:3: line of {size:,} bytes is over the limit of {LINE_MAX:,}; skipped"
    ]
    assert [event.seq for event in result.events] == [0, 1, 3]
    assert not result.truncated_tail
    assert peak < LINE_MAX + 16 * MIB, f"{peak:,} bytes"
