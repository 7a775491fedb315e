"""Generated runs that fail in known ways, for `workbench failures`: whose groups are known
because each run says how it fails (its tools before the failure, the failing tool and its
error text, its end), with whatever numbers, paths and ids its error text carries."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from traces.events import Error, ModelRequest, ModelResponse, RunEnd, RunStart, ToolEnd, ToolStart
from traces.recorder import Recorder
from traces.writer import JsonlWriter

TOOL_NAMES = ("list_dir", "read_file", "save_note")


def _tools(descriptions: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": descriptions.get(name, f"{name} it"),
                "parameters": {},
            },
        }
        for name in TOOL_NAMES
    ]


def failing_run(
    folder: Path,
    run_id: str,
    *,
    at: datetime,
    status: str = "max_turns",
    reason: str = "reached max_turns=3",
    before: tuple[str, ...] = ("list_dir",),
    tool: str | None = "read_file",
    error: str = "Error: no file 'src/unit.py'",
    model_error: str | None = None,
    model: str = "model-a",
    task: str = "read the units",
    system_prompt: str = "You read files.",
    descriptions: dict[str, str] | None = None,
) -> None:
    """A run that calls the tools `before` (each ok), then `tool`, which fails with
    `error` (no failing tool when None), or whose model call fails with `model_error`; then
    ends with `status` and `reason` (completed: a run that recovered). `descriptions`
    replace tools' descriptions. Its events are a second apart from `at`."""
    writer = JsonlWriter(folder, run_id)
    rec = Recorder(run_id, [writer])
    clock = iter(at + timedelta(seconds=n) for n in range(1000))
    rec.emit(
        RunStart,
        turn=None,
        at=next(clock),
        task=task,
        system_prompt=system_prompt,
        model=model,
        tools=_tools(descriptions or {}),
    )
    calls = [(name, True, "fine") for name in before]
    if tool is not None:
        calls.append((tool, False, error))
    for turn, (name, ok, text) in enumerate(calls, start=1):
        rec.turn = turn
        call_id = f"call_{run_id}_{turn}"
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}
        rec.emit(ModelRequest, at=next(clock), messages=[{"role": "user", "content": task}])
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        rec.emit(ModelResponse, at=next(clock), message=message)
        rec.emit(
            ToolStart, at=next(clock), call_id=call_id, name=name, arguments_raw="{}", arguments={}
        )
        rec.emit(
            ToolEnd,
            at=next(clock),
            call_id=call_id,
            name=name,
            ok=ok,
            result=text,
            error=None if ok else "tool_failure",
        )
    if model_error is not None:
        rec.turn = len(calls) + 1
        rec.emit(ModelRequest, at=next(clock), messages=[{"role": "user", "content": task}])
        rec.emit(Error, at=next(clock), where="model", kind="http_error", message=model_error)
    rec.emit(RunEnd, turn=None, at=next(clock), status=status, reason=reason)
    rec.close()
