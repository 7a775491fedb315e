"""Cases taken from recorded runs: the context the model saw at turn N, and what it chose.

A `from_run` case asks the model for the decision it made at turn N of a recorded run. The
history is rebuilt by the fork engine (the turn's recorded `model_request`, exactly what the
model was sent), and the tool results recorded anywhere in the run are kept so a sequence
case can be answered from the recording instead of re-running tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_core.tools.base import CallKey, ToolResult, call_key
from agent_core.wire.chat import tool_calls
from traces.home import ambiguous_run
from traces.run_names import is_safe_run_id
from workbench.engine.recording.fork.plan import ForkError, ForkPlan, ForkRequest, plan_fork
from workbench.engine.recording.runs.load import Recording, RecordingError, read_recording_file

__all__ = ["RecordingError"]


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] | None  # None when the model's argument string did not parse


@dataclass
class RecordedContext:
    recording: Recording
    plan: ForkPlan  # history and tools at the turn, as the fork engine rebuilds them
    chosen: list[ToolCall]  # what the model called at the turn
    results: dict[CallKey, ToolResult] = field(default_factory=dict)  # recorded results

    @property
    def run_id(self) -> str:
        return self.recording.run_id

    @property
    def turn(self) -> int:
        return self.plan.turn

    @property
    def tools(self) -> list[dict[str, Any]]:
        return [spec.to_openai() for spec in self.plan.specs]


def parse_calls(message: dict[str, Any]) -> list[ToolCall]:
    """What the model chose, with the arguments the loop ran the tools with."""
    return [ToolCall(call.name, call.arguments) for call in tool_calls(message)]


def find_trace(run_id: str, folders: list[Path]) -> Path:
    """The trace file of `run_id` (a path, or an id or unique prefix in one of `folders`)."""
    given = Path(run_id)
    if given.suffix == ".jsonl":
        if not given.is_file():
            raise RecordingError(f"no trace file at {given}")
        return given
    for folder in folders if is_safe_run_id(run_id) else ():  # no '*', '/' or '..' in it
        exact = folder / f"{run_id}.jsonl"
        if exact.is_file():
            return exact
        matches = sorted(folder.glob(f"{run_id}*.jsonl")) if folder.is_dir() else []
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise RecordingError(ambiguous_run(run_id, [path.stem for path in matches]))
    where = ", ".join(str(f) for f in folders)
    raise RecordingError(f"no trace for run {run_id!r} in {where}; check `workbench runs`")


def load_context(path: Path, turn: int, *, system: str | None = None) -> RecordedContext:
    """The recorded context of `turn`; `system` replaces the recorded system prompt."""
    recording = read_recording_file(path)
    try:
        plan = plan_fork(recording, ForkRequest(turn=turn, system=system))
    except ForkError as exc:
        raise RecordingError(str(exc)) from None
    response = recording.turns[turn].response
    results: dict[CallKey, ToolResult] = {}
    for _, start, end in recording.tool_calls():
        if end is not None and start.arguments is not None:
            results.setdefault(
                call_key(start.name, start.arguments),
                ToolResult(ok=end.ok, text=end.result, error=end.error, replayed=True),
            )
    return RecordedContext(
        recording=recording,
        plan=plan,
        chosen=parse_calls(response.message) if response is not None else [],
        results=results,
    )
