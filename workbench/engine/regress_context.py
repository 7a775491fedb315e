"""Cases taken from recorded runs: the context the model saw at turn N, and what it chose.

A `from_run` case asks the model for the decision it made at turn N of a recorded run. The
history is rebuilt from the turn's recorded `model_request` (exactly what the model was
sent), and the tool results recorded anywhere in the run are kept so a sequence case can be
answered from the recording instead of re-running tools.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_core.tools.base import ToolResult, ToolSpec
from traces.events import ModelRequest, ModelResponse, RunStart, ToolEnd, ToolStart
from traces.reader import NewerSchemaError, read_trace


class RecordingError(Exception):
    """The recorded run or turn cannot be used; one line saying what to do."""


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] | None  # None when the model's argument string did not parse


@dataclass
class RecordedContext:
    run_id: str
    turn: int
    messages: list[dict[str, Any]]  # as sent at `turn`, system message included
    tools: list[dict[str, Any]]  # the schemas offered at `turn`, OpenAI format
    tool_sources: dict[str, str]
    task: str
    chosen: list[ToolCall]  # what the model called at `turn`
    results: dict[str, ToolResult] = field(default_factory=dict)  # call key -> recorded result


def call_key(name: str, arguments: dict[str, Any] | None) -> str:
    return name + "\x00" + json.dumps(arguments, sort_keys=True, separators=(",", ":"))


def parse_calls(message: dict[str, Any]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        raw = function.get("arguments") or ""
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            parsed = None
        calls.append(
            ToolCall(str(function.get("name") or ""), parsed if isinstance(parsed, dict) else None)
        )
    return calls


def find_trace(run_id: str, folders: list[Path]) -> Path:
    """The trace file of `run_id` (a unique prefix is enough) in the first folder holding it."""
    for folder in folders:
        exact = folder / f"{run_id}.jsonl"
        if exact.is_file():
            return exact
        matches = sorted(folder.glob(f"{run_id}*.jsonl")) if folder.is_dir() else []
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise RecordingError(f"run id {run_id!r} is ambiguous in {folder}; give more of it")
    where = ", ".join(str(f) for f in folders)
    raise RecordingError(f"no trace for run {run_id!r} in {where}; check `workbench runs`")


def load_context(path: Path, turn: int) -> RecordedContext:
    try:
        read = read_trace(path)
    except NewerSchemaError as exc:
        raise RecordingError(str(exc)) from exc
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {exc.strerror or exc}") from exc
    start = next((e for e in read.events if isinstance(e, RunStart)), None)
    if start is None:
        raise RecordingError(f"{path}: no run_start; the trace is not a recorded run")
    # The last attempt of the turn is the request the recorded answer belongs to.
    requests = [e for e in read.events if isinstance(e, ModelRequest) and e.turn == turn]
    if not requests:
        turns = sorted({e.turn for e in read.events if isinstance(e, ModelRequest) and e.turn})
        raise RecordingError(
            f"run {start.run_id} has no model request at turn {turn}; recorded turns: "
            f"{', '.join(map(str, turns)) or 'none'}"
        )
    request = requests[-1]
    responses = [e for e in read.events if isinstance(e, ModelResponse) and e.turn == turn]
    chosen = parse_calls(responses[-1].message) if responses else []
    return RecordedContext(
        run_id=start.run_id,
        turn=turn,
        messages=[dict(m) for m in request.messages],
        tools=list(request.tools or start.tools),
        tool_sources=dict(start.tool_sources),
        task=start.task,
        chosen=chosen,
        results=_recorded_results(read.events),
    )


def _recorded_results(events: list[Any]) -> dict[str, ToolResult]:
    starts = {e.call_id: e for e in events if isinstance(e, ToolStart)}
    results: dict[str, ToolResult] = {}
    for end in events:
        if isinstance(end, ToolEnd) and end.call_id in starts:
            start = starts[end.call_id]
            results.setdefault(
                call_key(start.name, start.arguments),
                ToolResult(ok=end.ok, text=end.result, error=end.error, replayed=True),
            )
    return results


def spec_from_schema(schema: dict[str, Any], source: str = "recorded") -> ToolSpec:
    body = schema.get("function", schema)
    return ToolSpec(
        name=str(body.get("name") or ""),
        description=str(body.get("description") or ""),
        parameters=dict(body.get("parameters") or {"type": "object", "properties": {}}),
        source=source,
    )
