"""The tool calls a capture sees but does not run, recorded as `tool_start`/`tool_end` with
`observed: true`:

- the calls of an answer whose results the client sends back in its next request (`tool`
  messages, `function_call_output` items, `tool_result` blocks: all `tool` messages once
  read), each linked to its result by the call id;
- the calls the provider ran itself inside one answer (web search, code execution, remote
  MCP: `agent_core.wire.answer.ProviderCall`), recorded with the answer, `source: "server"`;
- a final-answer tool (smolagents' `final_answer`): the client ends its run on it and
  sends nothing back, so the call is recorded at once with its answer as its result, and
  the run ends `completed` with that answer.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from agent_core.wire.answer import ProviderCall
from agent_core.wire.chat import content_text, tool_call
from agent_core.wire.chat import final_answer as final_answer  # the capture ends a run on it
from traces.events import ToolEnd, ToolStart
from traces.recorder import Recorder

CLIENT_SOURCE = "client"
SERVER_SOURCE = "server"


def record_results(
    recorder: Recorder,
    turn: int,
    at: datetime,
    calls: list[dict[str, Any]],
    new_messages: list[Any],
    waited_ms: float,
) -> int:
    """Each of `calls` with the result the client sent for it among `new_messages` (an
    error when it sent none); the number of calls without a result."""
    results = {
        m.get("tool_call_id"): m
        for m in new_messages
        if isinstance(m, dict) and m.get("role") == "tool"
    }
    missing = 0
    for call in map(tool_call, calls):
        _start(recorder, turn, at, call.id, call.name, call.arguments_raw, CLIENT_SOURCE, call)
        result = results.get(call.id)
        text = content_text(result.get("content")) if result is not None else ""
        missed = None if result is not None else "the client sent no result for this call"
        _end(recorder, turn, at, call.id, call.name, text, missed, waited_ms)
        missing += result is None
    return missing


def record_provider_calls(
    recorder: Recorder, turn: int, at: datetime, calls: list[ProviderCall]
) -> int:
    """The calls the provider ran within an answer; the number that failed. A call whose
    result the answer does not hold (a hosted web search's hits are in the answer's text)
    ends with an empty result."""
    failed = 0
    for call in calls:
        _start(recorder, turn, at, call.id, call.name, call.arguments_raw, SERVER_SOURCE)
        _end(recorder, turn, at, call.id, call.name, call.result or "", call.error)
        failed += call.error is not None
    return failed


def record_final_answer(
    recorder: Recorder, turn: int, at: datetime, calls: list[dict[str, Any]], answer: str
) -> None:
    """The final-answer calls, each returning the answer (as smolagents' tool does)."""
    for call in map(tool_call, calls):
        _start(recorder, turn, at, call.id, call.name, call.arguments_raw, CLIENT_SOURCE, call)
        _end(recorder, turn, at, call.id, call.name, answer)


def _end(
    recorder: Recorder,
    turn: int,
    at: datetime,
    call_id: str,
    name: str,
    result: str,
    error: str | None = None,
    duration_ms: float = 0.0,
) -> None:
    """An observed call's end: what the client or the provider said became of it."""
    recorder.emit(
        ToolEnd,
        turn=turn,
        at=at,
        call_id=call_id,
        name=name,
        ok=error is None,
        result=result,
        error=error,
        duration_ms=duration_ms,
        observed=True,
    )


def _start(
    recorder: Recorder,
    turn: int,
    at: datetime,
    call_id: str,
    name: str,
    raw: str,
    source: str,
    parsed: Any = None,
) -> None:
    if parsed is None:
        try:
            value = json.loads(raw) if raw.strip() else {}
        except ValueError:
            value = None
        arguments = value if isinstance(value, dict) else None
        error = None if arguments is not None else "the arguments are not a JSON object"
    else:
        arguments, error = parsed.arguments, parsed.parse_error
    recorder.emit(
        ToolStart,
        turn=turn,
        at=at,
        call_id=call_id,
        name=name,
        arguments_raw=raw,
        arguments=arguments,
        parse_error=error,
        source=source,
    )
