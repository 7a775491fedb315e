"""What changed around a failure's first occurrence: its first run's set-up (model, system
prompt, each tool's description and schema) against the run of the same task just before
it. A change there is a lead to follow (`workbench why` verifies one), not a verdict.

"The same task" is the same task text (`failures.RUN_BEFORE_OF_TASK`), not the task
fingerprint the rest of the analysis groups runs by: the fingerprint holds the system
prompt and the tool names, which are among the changes named here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from traces.events import RunStart

if TYPE_CHECKING:
    from traces.store import TraceStore


@dataclass(frozen=True)
class SetUp:
    """What a run was given, with each part as a short digest (the model as its name)."""

    model: str
    system_prompt: str  # digest
    tools: dict[str, tuple[str, str]]  # name: (description digest, parameters digest)


@dataclass(frozen=True)
class Changes:
    """How a run's set-up differs from that of the run of its task before it."""

    run_before: str | None  # None: no earlier run of the task to compare with
    status_before: str | None
    # One line each: "model a → b", "tool read_file description 1a2b → 3c4d", ...; None
    # when either run's set-up is not recorded (a run without its run_start).
    changed: list[str] | None

    def to_json(self) -> dict[str, Any]:
        return {
            "run_before": self.run_before,
            "status_before": self.status_before,
            "changed": self.changed,
        }


def changes_before(store: TraceStore, run_ids: list[str]) -> dict[str, Changes]:
    """For each run, what changed in its set-up since the run of its task before it."""
    found: dict[str, Changes] = {}
    for run_id, before in store.runs_before_of_task(run_ids).items():
        if before is None:
            found[run_id] = Changes(None, None, [])
            continue
        now, then = _set_up(store, run_id), _set_up(store, before)
        changed = None if now is None or then is None else _differences(then, now)
        found[run_id] = Changes(before, store.run(before).status, changed)
    return found


def _set_up(store: TraceStore, run_id: str) -> SetUp | None:
    starts = store.events(run_id, types=["run_start"], limit=1)
    start = starts[0] if starts else None
    if not isinstance(start, RunStart):
        return None
    tools: dict[str, tuple[str, str]] = {}
    for tool in start.tools:
        function = tool.get("function", tool)
        name = str(function.get("name", "?"))
        tools[name] = (_digest(function.get("description")), _digest(function.get("parameters")))
    return SetUp(start.model, _digest(start.system_prompt), tools)


def _differences(before: SetUp, after: SetUp) -> list[str]:
    changed = []
    if before.model != after.model:
        changed.append(f"model {before.model} → {after.model}")
    if before.system_prompt != after.system_prompt:
        changed.append(f"system prompt {before.system_prompt} → {after.system_prompt}")
    for name in sorted(before.tools.keys() | after.tools.keys()):
        if name not in after.tools:
            changed.append(f"tool {name} removed")
        elif name not in before.tools:
            changed.append(f"tool {name} added")
        else:
            (old_text, old_schema), (new_text, new_schema) = before.tools[name], after.tools[name]
            if old_text != new_text:
                changed.append(f"tool {name} description {old_text} → {new_text}")
            if old_schema != new_schema:
                changed.append(f"tool {name} schema {old_schema} → {new_schema}")
    return changed


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:8]
