"""The recorder stamps events and fans them out; the writer makes crash-safe, redacted files."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from traces.events import EVENT_ADAPTER, McpMessage, ModelRequest, RunEnd, RunStart, ToolEnd
from traces.recorder import Recorder
from traces.redact import Redactor
from traces.writer import JsonlWriter, MemorySink


def test_recorder_stamps_gapless_seq_turn_and_utc_time() -> None:
    sink = MemorySink()
    recorder = Recorder("run-1", [sink])
    recorder.emit(RunStart, task="t", model="m")
    recorder.turn = 1
    recorder.emit(ModelRequest, messages=[{"role": "user", "content": "hi"}])
    recorder.emit(RunEnd, turn=None, status="completed")

    assert [e.seq for e in sink.events] == [0, 1, 2]
    assert [e.turn for e in sink.events] == [None, 1, None]
    assert all(e.run_id == "run-1" and e.ts.utcoffset() == timedelta(0) for e in sink.events)
    assert recorder.drain() == sink.events
    assert recorder.drain() == []


def test_a_failing_sink_never_fails_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    class BrokenSink:
        def write(self, event: object) -> None:
            raise OSError("disk full")

        def close(self) -> None:
            pass

    good = MemorySink()
    recorder = Recorder("run-2", [BrokenSink(), good])
    recorder.emit(RunStart, task="t", model="m")
    recorder.emit(RunEnd, status="completed")

    assert len(good.events) == 2
    assert capsys.readouterr().err.count("disk full") == 1  # reported once, not per event


def test_writer_appends_one_flushed_line_per_event_that_reads_back(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path, "run-3")
    recorder = Recorder("run-3", [writer])
    recorder.emit(RunStart, task="t", model="m")
    # Flushed per event: the file is complete before the writer is closed.
    lines = (tmp_path / "run-3.jsonl").read_text().splitlines()
    assert len(lines) == 1
    recorder.turn = 1
    recorder.emit(ToolEnd, call_id="c1", name="read_file", ok=True, result="ü ✓")
    recorder.close()

    lines = (tmp_path / "run-3.jsonl").read_text(encoding="utf-8").splitlines()
    events = [EVENT_ADAPTER.validate_json(line) for line in lines]
    assert [e.type for e in events] == ["run_start", "tool_end"]
    assert isinstance(events[1], ToolEnd) and events[1].result == "ü ✓"
    assert json.loads(lines[0])["ts"].endswith("Z")


def test_secrets_are_redacted_at_write_time_with_stable_placeholders(tmp_path: Path) -> None:
    key = "sk-test-0123456789abcdef"
    redactor = Redactor(secrets=[key], patterns=[r"ACME-\d{6}"])
    writer = JsonlWriter(tmp_path, "run-4", redactor)
    recorder = Recorder("run-4", [writer])
    recorder.emit(
        RunStart,
        task=f"use {key} and ticket ACME-123456",
        model="m",
        params={"headers": {"Authorization": "Bearer abcdefghijklmnop"}},
        meta={"note": f"again {key}", "curl": "-H 'Authorization: Bearer qrstuvwxyz123456'"},
    )
    recorder.close()

    text = (tmp_path / "run-4.jsonl").read_text()
    assert key not in text
    assert "abcdefghijklmnop" not in text and "qrstuvwxyz123456" not in text
    assert "ACME-123456" not in text
    record = json.loads(text)
    assert record["task"] == "use [REDACTED:api_key] and ticket [REDACTED:pattern-1]"
    assert record["meta"]["note"] == "again [REDACTED:api_key]"
    assert record["params"]["headers"]["Authorization"] == "[REDACTED:authorization]"


def test_unknown_event_type_and_extra_fields_are_rejected() -> None:
    line = {"run_id": "r", "seq": 0, "ts": "2026-01-01T00:00:00Z", "type": "nope"}
    with pytest.raises(ValueError):
        EVENT_ADAPTER.validate_python(line)
    line = {"run_id": "r", "seq": 0, "ts": "2026-01-01T00:00:00Z", "type": "run_end"}
    line |= {"status": "completed", "surprise": 1}
    with pytest.raises(ValueError):
        EVENT_ADAPTER.validate_python(line)


def test_events_before_run_start_are_written_after_it_keeping_their_time() -> None:
    sink = MemorySink()
    recorder = Recorder("run-5", [sink], run_start_first=True)
    frame = recorder.emit(McpMessage, server="time", direction="send", frame={"id": 1})
    assert sink.events == []  # held until the run starts
    recorder.emit(RunStart, task="t", model="m")
    recorder.emit(RunEnd, status="completed")

    assert [(e.type, e.seq) for e in sink.events] == [
        ("run_start", 0),
        ("mcp_message", 1),
        ("run_end", 2),
    ]
    assert sink.events[1].ts == frame.ts  # the frame keeps the time it crossed the wire
    assert [e.seq for e in recorder.drain()] == [0, 1, 2]
