"""The step where a failing run left the path its task's passing runs took: one candidate
cause of `workbench why`.

This is the seam to the compare engine (`workbench compare`, issue 38 part 1), which aligns
N runs of one task and finds, for each failing run, the first step where it left the
passing runs' path; when it lands, `left_passing_path` becomes a call to it. Until then the
path is read here as simply as it can be: each run as its steps in order (each tool call
the model asked for, with its arguments, each result a tool gave, and the final answer),
and the departure is the first step no passing run that came the same way took.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_core.tools.base import call_key

if TYPE_CHECKING:
    from workbench.engine.recording.runs.load import Recording


@dataclass(frozen=True)
class Step:
    turn: int
    seq: int  # the event the step is
    kind: str  # "call" (the model asked for a tool), "result" (a tool answered), "answer"
    name: str  # the tool's name ("" for an answer)
    arguments: str  # the call's arguments as `call_key` reads them
    text: str  # a result's text, an answer's text
    ok: bool = True
    call_id: str | None = None

    @property
    def key(self) -> tuple[str, str, str, str, bool]:
        """What two runs must share for this step to be the same step of one path."""
        return (self.kind, self.name, self.arguments, self.text, self.ok)


@dataclass(frozen=True)
class Departure:
    """The failing run's first step off the passing path, and the passing run it parted
    from (the first of those that came the same way up to it)."""

    step: Step | None  # None: the failing run stopped where the passing run went on
    index: int  # how many steps the runs shared
    passing_run: str
    passing_step: Step | None  # what the passing run did there (None: it ended there)


def steps_of(recording: Recording) -> list[Step]:
    """A run's steps in order: tool calls, their results, and the final answer."""
    steps: list[Step] = []
    for turn, start, end in recording.tool_calls():
        arguments = call_key(start.name, start.arguments, start.arguments_raw)[1]
        steps.append(Step(turn, start.seq, "call", start.name, arguments, "", True, start.call_id))
        if end is not None:
            steps.append(
                Step(
                    turn, end.seq, "result", start.name, arguments, end.result, end.ok, end.call_id
                )
            )
    run_end = recording.run_end
    if run_end is not None and run_end.status == "completed":
        steps.append(
            Step(run_end.turn or 0, run_end.seq, "answer", "", "", run_end.final_answer or "")
        )
    return steps


def left_passing_path(failing: Recording, passing: list[Recording]) -> Departure | None:
    """Where `failing` first did what no passing run that came its way did; None when no
    passing run is given."""
    if not passing:
        return None
    mine = steps_of(failing)
    paths = [(run.run_id, steps_of(run)) for run in passing]
    for index, step in enumerate(mine):
        same = [(run, steps) for run, steps in paths if len(steps) > index]
        same = [(run, steps) for run, steps in same if steps[index].key == step.key]
        if not same:
            run, steps = paths[0]
            return Departure(step, index, run, steps[index] if len(steps) > index else None)
        paths = same
    run, steps = paths[0]
    return Departure(None, len(mine), run, steps[len(mine)] if len(steps) > len(mine) else None)
