"""Secrets stay out of trace files on the writer's fast path and on its fallback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from traces.events import ModelRequest, ToolEnd
from traces.recorder import Recorder
from traces.redact import Redactor
from traces.writer import JsonlWriter


@pytest.mark.parametrize(
    "secret", ["sk-plain-0123456789", 'sk-"quoted"\\slash-0123', "sk-ünï-0123456"]
)
def test_secret_never_written_whatever_its_characters(tmp_path: Path, secret: str) -> None:
    writer = JsonlWriter(tmp_path, "run", Redactor([secret]))
    recorder = Recorder("run", [writer])
    recorder.turn = 1
    recorder.emit(ModelRequest, messages=[{"role": "user", "content": f"key={secret}"}])
    recorder.emit(
        ToolEnd, call_id="c", name="curl", ok=True, result="Authorization: Bearer abcdefghijkl123"
    )
    recorder.close()
    text = writer.path.read_text(encoding="utf-8")
    assert secret not in text and json.dumps(secret)[1:-1] not in text
    assert "abcdefghijkl123" not in text
    assert "[REDACTED:api_key]" in text and "Bearer [REDACTED:authorization]" in text
