"""Cases captured from recorded runs (`workbench capture-case`): one turn's decision, or
every turn a label is on.

A case is the recorded context at a turn (a `from_run` case) expecting what the model did
there: the tool it chose (and, asked, its arguments and its text), or, at a turn that
answered without a tool, no tool (and, asked, the answer's text). A label becomes a suite:
each labelled turn one case; a run labelled as a whole gives its failing turn, else its
last.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from agent_core.wire.chat import content_text
from workbench.engine.regress.context import RecordedContext, RecordingError, load_context
from workbench.engine.regress.suite import Case, SuiteError, append_case, load_suite

if TYPE_CHECKING:
    from traces.store import TraceStore


@dataclass(frozen=True)
class Expect:
    """What a captured case checks beyond the decision's tool (or its answering)."""

    args: bool = False  # the recorded arguments of the chosen tool
    text: bool = False  # the recorded text of the decision
    given_text: str | None = None  # this text instead of the recorded one
    min_pass_rate: float = 1.0


def recorded_text(context: RecordedContext) -> str:
    """What the model said at the context's turn, on one line's worth of white space."""
    response = context.recording.turns[context.turn].response
    message = response.message if response is not None else {}
    return " ".join(content_text(message.get("content")).split())


def case_at(context: RecordedContext, case_id: str, expect: Expect) -> Case:
    """The case of the context's turn: its recorded decision, as `expect` asks (a turn
    that said nothing expects no text)."""
    if context.recording.turns[context.turn].response is None:
        raise RecordingError(
            f"run {context.run_id[:12]} has no answer at turn {context.turn} (the model "
            "call failed): there is no decision to expect"
        )
    text = expect.given_text or (recorded_text(context) if expect.text else None)
    case = Case(
        id=case_id,
        from_run=context.run_id,
        turn=context.turn,
        expect_text=text or None,
        min_pass_rate=expect.min_pass_rate,
    )
    if not context.chosen:
        return replace(case, expect_no_tool=True)
    first = context.chosen[0]
    # TOML has no null: an argument the model sent as null is left out of the check.
    args = {k: v for k, v in (first.arguments or {}).items() if v is not None}
    return replace(case, expect_tool=first.name, expect_args=args if expect.args else {})


def comment_for(context: RecordedContext, label: str | None = None) -> str:
    """The comment above a captured case: where it came from."""
    why = f" (labelled {label!r})" if label else ""
    return (
        f"captured from run {context.run_id} turn {context.turn}{why}: "
        f"task {context.plan.task[:60]!r}"
    )


def capture_turn(
    trace: Path,
    turn: int,
    suite: Path,
    expect: Expect,
    case_id: str | None = None,
    *,
    copy: bool = True,
    label: str | None = None,
) -> Case:
    """Append the case of the run's `turn` (its trace file: `context.find_trace`) to
    `suite`, the trace copied beside it unless `copy` is off; `RecordingError` or
    `SuiteError` (one line) when there is no decision there or the suite cannot take it.
    What `workbench capture-case RUN --turn N`, each turn of `--from-label` (`label`, named
    in the case's comment) and the TUI's key on a turn do."""
    context = load_context(trace, turn)
    case = case_at(context, case_id or f"{context.run_id[:8]}-t{turn}", expect)
    append_case(suite, case, comment=comment_for(context, label))
    if copy:
        copy_trace(trace, suite)
    return case


def copy_trace(trace: Path, suite: Path) -> None:
    """The trace beside the suite (`traces/`), so it runs where the home is not."""
    copies = suite.parent / "traces"
    copies.mkdir(parents=True, exist_ok=True)
    if not (copies / trace.name).exists():
        shutil.copyfile(trace, copies / trace.name)


@dataclass(frozen=True)
class Labelled:
    """A turn a label asks for: labelled itself, or chosen for a run labelled whole."""

    run_id: str
    turn: int
    why: str  # "labelled turn", "failing turn" or "last turn"


def labelled_turns(store: TraceStore, label: str) -> list[Labelled]:
    """The turns `label` is on (a tool call's label counts for its turn), each once, in
    the order they were labelled. A run labelled as a whole gives its first failing turn,
    else its last turn."""
    found: dict[tuple[str, int], Labelled] = {}
    for row in store.annotations():
        if label not in (row.get("labels") or []):
            continue
        run_id = str(row["run_id"])
        if row["turn"] is not None:
            turn = int(row["turn"])
            found.setdefault((run_id, turn), Labelled(run_id, turn, "labelled turn"))
            continue
        turns = store.turn_numbers(run_id)
        if not turns:
            continue
        failure = store.first_failure(run_id)
        if failure is not None and failure.turn is not None and failure.turn in turns:
            pick = Labelled(run_id, failure.turn, "failing turn")
        else:
            pick = Labelled(run_id, turns[-1], "last turn")
        found.setdefault((run_id, pick.turn), pick)
    return list(found.values())


@dataclass(frozen=True)
class Captured:
    case: Case | None  # None: not added
    source: Labelled
    problem: str = ""  # why not (already in the suite, no recorded context, ...)


def capture_label(
    store: TraceStore,
    traces: list[Path],
    label: str,
    suite: Path,
    expect: Expect,
    *,
    copy: bool = True,
) -> list[Captured]:
    """Append a case to `suite` for each turn `label` is on; a case already there (the
    same id) is left as it is, so capturing a label again adds only what is new."""
    from workbench.engine.regress.context import find_trace

    existing = {case.id for case in load_suite(suite).cases} if suite.exists() else set()
    out: list[Captured] = []
    for source in labelled_turns(store, label):
        case_id = f"{_slug(label)}-{source.run_id[:8]}-t{source.turn}"
        if case_id in existing:
            out.append(Captured(None, source, "already in the suite"))
            continue
        try:
            trace = find_trace(source.run_id, traces)
            case = capture_turn(trace, source.turn, suite, expect, case_id, copy=copy, label=label)
        except (RecordingError, SuiteError, ValueError, TypeError) as exc:
            out.append(Captured(None, source, str(exc)))
            continue
        existing.add(case_id)
        out.append(Captured(case, source))
    return out


def _slug(label: str) -> str:
    """A label as a case id's first part (letters, digits, '-', '_', '.')."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-_.") or "label"
