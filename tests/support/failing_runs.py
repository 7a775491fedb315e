"""Generated runs whose right answers are known, for `workbench failures` and `compare`:
each run says what it does (its tool calls with their arguments and results, its answer,
its end), so the groups, paths and variants they make are known.

    failing_run(folder, "r1", at=now, before=("list_dir",), tool="read_file", error="…")
    runs_of_one_task(folder, [(6, PASSING), (3, Script(calls=(...), status="max_turns"))])
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.support.generated_runs import recording
from traces.events import Error, ModelRequest, ModelResponse, RunEnd, RunStart, ToolEnd, ToolStart
from traces.recorder import Recorder

TOOL_NAMES = ("list_dir", "read_file", "save_note")


@dataclass(frozen=True)
class Call:
    """One tool call, in a turn of its own: ok with `result`, or failing with it."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    ok: bool = True
    result: str = "fine"


@dataclass(frozen=True)
class Script:
    """What a run does: its calls in order; then the answer (a turn whose response calls no
    tool), or a call the model asks for that never runs (the loop's refused repeat), or a
    model call that fails; then its end."""

    calls: tuple[Call, ...] = ()
    answer: str | None = None
    unrun: Call | None = None
    model_error: str | None = None
    status: str = "completed"
    reason: str = ""


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


def recorded_run(
    folder: Path,
    run_id: str,
    script: Script,
    *,
    at: datetime,
    model: str = "model-a",
    task: str = "read the units",
    system_prompt: str = "You read files.",
    descriptions: dict[str, str] | None = None,
    meta: dict[str, Any] | None = None,
) -> None:
    """The trace of a run that does what `script` says, its events a second apart from
    `at`. `descriptions` replace tools' descriptions; `meta` is its run_start's."""
    with recording(folder, run_id) as rec:
        _record(rec, script, at, model, task, system_prompt, descriptions, meta)


def _record(
    rec: Recorder,
    script: Script,
    at: datetime,
    model: str,
    task: str,
    system_prompt: str,
    descriptions: dict[str, str] | None,
    meta: dict[str, Any] | None,
) -> None:
    clock = iter(at + timedelta(seconds=n) for n in range(1000))
    rec.emit(
        RunStart,
        turn=None,
        at=next(clock),
        task=task,
        system_prompt=system_prompt,
        model=model,
        tools=_tools(descriptions or {}),
        meta=meta or {},
    )
    turn = 0
    for turn, call in enumerate(script.calls, start=1):
        rec.turn = turn
        call_id = f"call_{rec.run_id}_{turn}"
        raw = json.dumps(call.arguments)
        rec.emit(ModelRequest, at=next(clock), messages=[{"role": "user", "content": task}])
        message = {"role": "assistant", "content": None, "tool_calls": [_asked(call_id, call)]}
        rec.emit(ModelResponse, at=next(clock), message=message)
        rec.emit(
            ToolStart,
            at=next(clock),
            call_id=call_id,
            name=call.tool,
            arguments_raw=raw,
            arguments=call.arguments,
        )
        rec.emit(
            ToolEnd,
            at=next(clock),
            call_id=call_id,
            name=call.tool,
            ok=call.ok,
            result=call.result,
            error=None if call.ok else "tool_failure",
        )
    last = turn + 1
    if script.answer is not None or script.unrun is not None or script.model_error is not None:
        rec.turn = last
        rec.emit(ModelRequest, at=next(clock), messages=[{"role": "user", "content": task}])
    if script.answer is not None:
        message = {"role": "assistant", "content": script.answer}
        rec.emit(ModelResponse, at=next(clock), message=message)
    elif script.unrun is not None:
        asked = _asked(f"call_{rec.run_id}_{last}", script.unrun)
        message = {"role": "assistant", "content": None, "tool_calls": [asked]}
        rec.emit(ModelResponse, at=next(clock), message=message)
    elif script.model_error is not None:
        message_text = script.model_error
        rec.emit(Error, at=next(clock), where="model", kind="http_error", message=message_text)
    final = script.answer if script.status == "completed" else None
    rec.emit(
        RunEnd,
        turn=None,
        at=next(clock),
        status=script.status,
        reason=script.reason,
        final_answer=final,
    )


def _asked(call_id: str, call: Call) -> dict[str, Any]:
    """The call as the model's answer asks for it (OpenAI shape)."""
    arguments = json.dumps(call.arguments)
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": call.tool, "arguments": arguments},
    }


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
    calls = [Call(name) for name in before]
    if tool is not None:
        calls.append(Call(tool, ok=False, result=error))
    script = Script(tuple(calls), model_error=model_error, status=status, reason=reason)
    recorded_run(
        folder,
        run_id,
        script,
        at=at,
        model=model,
        task=task,
        system_prompt=system_prompt,
        descriptions=descriptions,
    )


# --- N runs of one task, with known variants -------------------------------------------

LIST = Call("list_dir", {"path": "."}, result="units.txt notes.txt")
READ = Call("read_file", {"path": "units.txt"}, result="metre second kilogram")
ANSWER = "The units are metre, second and kilogram."
# The path the passing runs share: list the folder, read the file, answer.
PASSING = Script((LIST, READ), answer=ANSWER, reason="the model answered")


def runs_of_one_task(
    folder: Path,
    scripts: list[tuple[str, int, Script]],
    *,
    at: datetime | None = None,
    task: str = "read the units",
    meta: dict[str, Any] | None = None,
) -> dict[str, list[str]]:
    """Runs of one task: for each (name, n, script), n runs doing what the script says,
    with ids `<name>-<k>`, started in turns across the scripts (so no script's runs come
    first). The run ids made, by name."""
    start = at or datetime.now(UTC).replace(microsecond=0) - timedelta(days=1)
    made: dict[str, list[str]] = {name: [] for name, _, _ in scripts}
    order = [(k, name, script) for name, n, script in scripts for k in range(n)]
    order.sort(key=lambda item: (item[0], item[1]))
    for index, (k, name, script) in enumerate(order):
        run_id = f"{name}-{k}"
        when = start + timedelta(minutes=index)
        recorded_run(folder, run_id, script, at=when, task=task, meta=meta)
        made[name].append(run_id)
    return made


SEARCH = Call("search_files", {"pattern": "unit"}, result="units.txt")
BROKEN = Call("read_file", {"path": "units.txt"}, ok=False, result="Error: permission denied")
STUCK_AT = "max_turns"
STUCK_WHY = "reached max_turns=3"
# 21 runs of one task whose comparison is known: 11 pass (6 take the path, 4 search first,
# 1 answers otherwise), 10 fail in known ways.
KNOWN_GROUP: list[tuple[str, int, Script]] = [
    ("pass", 6, PASSING),
    ("search", 4, Script((SEARCH, READ), answer=ANSWER)),
    ("searchfail", 3, Script((SEARCH, BROKEN), status=STUCK_AT, reason=STUCK_WHY)),
    (
        "args",
        2,
        Script(
            (LIST, Call("read_file", {"path": "unit.txt"}, ok=False)),
            status=STUCK_AT,
            reason=STUCK_WHY,
        ),
    ),
    ("broken", 2, Script((LIST, BROKEN), status=STUCK_AT, reason=STUCK_WHY)),
    ("dup", 1, Script((LIST, READ), unrun=READ, status="duplicate_tool_calls", reason="again")),
    ("late", 1, Script((LIST, READ), status=STUCK_AT, reason=STUCK_WHY)),
    ("merr", 1, Script((LIST,), model_error="upstream 503", status="error", reason="model")),
    ("other", 1, Script((LIST, READ), answer="The units are metres and seconds.")),
]
# Its variants: the runs' names, the step (1-based) where they left the path, how, how
# many runs and how many of them failed. The path: list_dir, read_file, answer, end.
KNOWN_VARIANTS: list[tuple[set[str], int, str, int, int]] = [
    ({"search", "searchfail"}, 1, "other_tool", 7, 3),
    ({"args"}, 2, "other_arguments", 2, 2),
    ({"broken"}, 2, "tool_error", 2, 2),
    ({"merr"}, 2, "error", 1, 1),
    ({"dup"}, 3, "not_run", 1, 1),
    ({"late"}, 3, "limit", 1, 1),
    ({"other"}, 3, "other_answer", 1, 0),
]


def variants_of(report: dict[str, Any]) -> list[tuple[set[str], int, str, int, int]]:
    """A `compare --json` report's variants in KNOWN_VARIANTS' shape, in its order (its
    run ids named as `runs_of_one_task` names them: `<name>-<k>`)."""
    return [
        (
            {run.rsplit("-", 1)[0] for run in v["run_ids"]},
            v["departure"]["position"] + 1,
            v["departure"]["how"],
            v["runs"],
            v["failed"],
        )
        for v in report["variants"]
    ]
