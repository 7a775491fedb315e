"""Captured chat-completion streams (tests/fixtures/streams) and how to serve them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workbench.engine.http.model_server import Reply

STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "streams"


def stream_files() -> list[Path]:
    return sorted(STREAMS.glob("*.jsonl"))


def load_stream(path: Path | str) -> tuple[dict[str, Any], list[dict[str, Any] | str]]:
    """The header and the SSE lines: dicts are data payloads, strings raw SSE lines."""
    path = STREAMS / path if isinstance(path, str) else path
    header, *rest = path.read_text(encoding="utf-8").splitlines()
    lines: list[dict[str, Any] | str] = []
    for line in rest:
        payload = json.loads(line)
        lines.append(payload["_sse_raw"] if "_sse_raw" in payload else as_chunk(payload))
    return json.loads(header), lines


def as_chunk(payload: dict[str, Any]) -> dict[str, Any]:
    """A few partial captures quote only a delta, or only a tool-call entry; wrap those in
    the chunk around them so the SDK sees a chunk. Whole chunks pass unchanged."""
    if "choices" in payload or "error" in payload or "usage" in payload:
        return payload
    if "delta" in payload:
        return {"object": "chat.completion.chunk", "choices": [{"index": 0, **payload}]}
    if "function" in payload:
        delta = {"tool_calls": [payload]}
        return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
    return payload


def stream_reply(path: Path | str, *, data_prefix: str = "data: ") -> Reply:
    _, lines = load_stream(path)
    return Reply(chunks=lines, data_prefix=data_prefix)
