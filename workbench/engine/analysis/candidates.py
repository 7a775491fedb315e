"""Candidate causes of a failed run, each read from the events it rests on (`workbench why`).

A candidate is a lead, not a verdict: `why` tests the ones a fork can test (`Fix`) and ranks
them by what the forks showed. The kinds, in the order they are listed when nothing was
verified: where the run left the passing runs of its task, a tool error the model saw and
acted on, the run's first error, a tool's description or schema or the system prompt that
differ from the last passing run's, a repeated call, and the limit the run hit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agent_core.tools.base import call_key
from traces.events import Error, ToolEnd, ToolStart

if TYPE_CHECKING:
    from traces.events import Event
    from workbench.engine.analysis.compare import Departure
    from workbench.engine.recording.runs.load import Recording

CandidateKind = Literal[
    "left_passing_path",
    "tool_error",
    "first_error",
    "tool_changed",
    "system_prompt_changed",
    "repeated_call",
    "limit_hit",
]
KIND_ORDER: tuple[CandidateKind, ...] = CandidateKind.__args__  # type: ignore[attr-defined]
LIMIT_STATUSES = frozenset({"max_turns", "duplicate_tool_calls", "token_budget", "timeout"})


@dataclass(frozen=True)
class Evidence:
    """One event a candidate rests on."""

    run_id: str
    seq: int
    turn: int | None
    call_id: str | None
    what: str  # one line: what the event shows

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Fix:
    """The fork that tests a candidate: the failing run forked at `turn` with these edits."""

    turn: int
    says: str  # the edit in words
    mocks: dict[str, str] = field(default_factory=dict)
    tool_descriptions: dict[str, str] = field(default_factory=dict)
    tool_schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    system: str | None = None

    @property
    def edited(self) -> bool:
        """False for a fork that only asks the model again: serve-model would answer it with
        a recorded answer, which proves nothing."""
        return bool(self.mocks or self.tool_descriptions or self.tool_schemas) or (
            self.system is not None
        )

    @property
    def key(self) -> str:
        """Candidates with the same fix share their forks."""
        return repr(
            (
                self.turn,
                sorted(self.mocks.items()),
                sorted(self.tool_descriptions.items()),
                sorted((k, repr(v)) for k, v in self.tool_schemas.items()),
                self.system,
            )
        )

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Candidate:
    kind: CandidateKind
    title: str
    evidence: list[Evidence]
    fix: Fix | None = None
    untestable: str | None = None  # why no fork can test it, when none can


@dataclass(frozen=True)
class TaskRuns:
    """The failed run and what it is compared with."""

    failing: Recording
    passing: list[Recording]  # completed runs of its task (task fingerprint), newest first
    # The newest completed run with the same task text and tool names: the task fingerprint
    # holds the system prompt, so a run whose prompt differs is of another "task" by it.
    same_task_text: Recording | None

    @property
    def last_passing(self) -> Recording | None:
        """The newest passing run started before the failing one, else the newest."""
        return newest_before(self.passing, self.failing)


def newest_before(runs: list[Recording], failing: Recording) -> Recording | None:
    """Of `runs` (newest first), the newest started before `failing`, else the newest."""
    before = [run for run in runs if run.run_start.ts < failing.run_start.ts]
    return before[0] if before else runs[0] if runs else None


def candidates(
    runs: TaskRuns, first_failure: Event | None, departure: Departure | None
) -> list[Candidate]:
    """Every candidate cause the recordings show, in `KIND_ORDER`; `departure` is where
    the failing run left its task's passing path (`compare.left_path`, results counted)."""
    found = [
        *_departure(runs, departure),
        *_tool_errors(runs, first_failure),
        *_first_error(runs, first_failure),
        *_tool_changes(runs),
        *_system_prompt(runs),
        *_repeats(runs.failing),
        *_limit(runs.failing),
    ]
    return sorted(found, key=lambda c: KIND_ORDER.index(c.kind))


def _evidence(run: Recording, event: Event, what: str) -> Evidence:
    return Evidence(run.run_id, event.seq, event.turn, getattr(event, "call_id", None), what)


def _next_model_turn(run: Recording, turn: int | None) -> int | None:
    return next((n for n in run.model_turns if turn is not None and n > turn), None)


def _mock(runs: TaskRuns, start: ToolStart) -> tuple[Fix | None, str | None]:
    """The fix for a call's result: the passing run's result of the same call (else of the
    same tool at the same place among its calls), from the next model turn on."""
    failing = runs.failing
    turn = _next_model_turn(failing, start.turn)
    if turn is None:
        return None, "no model turn came after this call: a fork has nowhere to start"
    key = call_key(start.name, start.arguments, start.arguments_raw)
    nth = [s.call_id for _, s, _ in failing.tool_calls() if s.name == start.name].index(
        start.call_id
    )
    ordered = [r for r in [runs.last_passing] if r is not None] + runs.passing
    for run in ordered:
        calls = [(s, e) for _, s, e in run.tool_calls() if e is not None and e.ok]
        same = [e for s, e in calls if call_key(s.name, s.arguments, s.arguments_raw) == key]
        named = [e for s, e in calls if s.name == start.name]
        end = same[0] if same else named[nth] if len(named) > nth else None
        if end is not None:
            says = f"{start.call_id}'s result as passing run {run.run_id[:12]} had it"
            return Fix(turn, says, mocks={start.call_id: end.result}), None
    return None, f"no passing run of the task has a result for {start.name}"


# Departures a fork tests by mocking the call's result with the passing run's.
_MOCKED = ("tool_error", "other_outcome", "other_result")


def _departure(runs: TaskRuns, found: Departure | None) -> list[Candidate]:
    """A call or answer off the path (an error or an end there is the first error's or the
    limit's candidate)."""
    if found is None or found.step.kind not in ("call", "answer") or found.step.seq is None:
        return []
    step, expected, failing = found.step, found.expected, runs.failing
    theirs = (
        f"passing run {expected.run_id[:12]}: {_short(expected.label())}"
        if expected is not None
        else "the passing runs had ended there"
    )
    event = next(e for e in failing.events if e.seq == step.seq)
    evidence = [_evidence(failing, event, f"{_short(step.label())}; {theirs}")]
    title = f"left the passing runs' path at turn {step.turn}: {found.says()}"
    if found.how in _MOCKED and isinstance(event, ToolStart):
        fix, why_not = _mock(runs, event)
        return [Candidate("left_passing_path", title, evidence, fix, why_not)]
    turn = step.turn or 0
    again = Fix(turn, f"the model asked again at turn {turn}, nothing edited")
    return [Candidate("left_passing_path", title, evidence, again)]


def _short(text: str, width: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _tool_errors(runs: TaskRuns, first: Event | None) -> list[Candidate]:
    """Failed tool calls whose result the model then read (a later model turn)."""
    failing = runs.failing
    found: list[Candidate] = []
    for turn, start, end in failing.tool_calls():
        if end is None or end.ok or _next_model_turn(failing, turn) is None:
            continue
        if first is not None and first.seq == end.seq:
            continue  # the first error says it, with this evidence
        reply = failing.turns[_next_model_turn(failing, turn) or 0].response
        evidence = [_evidence(failing, end, f"{start.name} → error: {_short(end.result)}")]
        if reply is not None:
            evidence.append(_evidence(failing, reply, "the model's next answer, having read it"))
        fix, why_not = _mock(runs, start)
        title = f"the model acted on {start.name}'s error at turn {turn}"
        found.append(Candidate("tool_error", title, evidence, fix, why_not))
    return found[:3]


def _first_error(runs: TaskRuns, first: Event | None) -> list[Candidate]:
    failing = runs.failing
    if first is None:
        return []
    if isinstance(first, ToolEnd) and not first.ok:
        start = next(s for _, s, _ in failing.tool_calls() if s.call_id == first.call_id)
        evidence = [_evidence(failing, first, f"{first.name} → error: {_short(first.result)}")]
        nxt = _next_model_turn(failing, first.turn)
        reply = failing.turns[nxt].response if nxt is not None else None
        if reply is not None:
            evidence.append(_evidence(failing, reply, "the model's next answer, having read it"))
        fix, why_not = _mock(runs, start)
        title = f"first error: {first.name} failed at turn {first.turn}"
        return [Candidate("first_error", title, evidence, fix, why_not)]
    if isinstance(first, Error):
        what = f"{first.where} error {first.kind}: {_short(first.message)}"
        evidence = [_evidence(failing, first, what)]
        if first.where == "model" and first.turn in failing.model_turns:
            again = Fix(first.turn, f"the same request sent again at turn {first.turn}")
            return [Candidate("first_error", f"first error: {what}", evidence, again)]
        return [
            Candidate(
                "first_error", f"first error: {what}", evidence, None, "not a step a fork re-runs"
            )
        ]
    if isinstance(first, ToolStart):
        what = f"{first.name} got arguments that do not parse: {_short(first.parse_error or '')}"
        again = Fix(first.turn or 0, f"the model asked again at turn {first.turn}")
        if first.turn in failing.model_turns:
            return [
                Candidate(
                    "first_error", f"first error: {what}", [_evidence(failing, first, what)], again
                )
            ]
    return []


def _tools_of(run: Recording) -> dict[str, dict[str, Any]]:
    return {
        str(f.get("name")): f for f in (tool.get("function", tool) for tool in run.run_start.tools)
    }


def _tool_changes(runs: TaskRuns) -> list[Candidate]:
    passing, failing = runs.last_passing, runs.failing
    if passing is None or not failing.model_turns:
        return []
    mine, theirs = _tools_of(failing), _tools_of(passing)
    descriptions: dict[str, str] = {}
    schemas: dict[str, dict[str, Any]] = {}
    for name in sorted(mine.keys() & theirs.keys()):
        if mine[name].get("description") != theirs[name].get("description"):
            descriptions[name] = str(theirs[name].get("description") or "")
        if mine[name].get("parameters") != theirs[name].get("parameters"):
            schemas[name] = dict(theirs[name].get("parameters") or {})
    if not descriptions and not schemas:
        return []
    parts = [f"{n}'s description" for n in descriptions] + [f"{n}'s schema" for n in schemas]
    changed = ", ".join(parts)
    evidence = [
        _evidence(failing, failing.run_start, f"offered {changed} unlike the passing run"),
        _evidence(passing, passing.run_start, f"passing run {passing.run_id[:12]}'s tools"),
    ]
    fix = Fix(
        failing.model_turns[0],
        f"{changed} as passing run {passing.run_id[:12]} had them",
        tool_descriptions=descriptions,
        tool_schemas=schemas,
    )
    title = f"{changed} unlike the last passing run's"
    return [Candidate("tool_changed", title, evidence, fix)]


def _system_prompt(runs: TaskRuns) -> list[Candidate]:
    other, failing = runs.same_task_text, runs.failing
    if other is None or not failing.model_turns:
        return []
    theirs = other.run_start.system_prompt
    if theirs == failing.run_start.system_prompt:
        return []
    evidence = [
        _evidence(
            failing,
            failing.run_start,
            f"system prompt {_short(failing.run_start.system_prompt or '')}",
        ),
        _evidence(other, other.run_start, f"passing run's system prompt {_short(theirs or '')}"),
    ]
    fix = Fix(
        failing.model_turns[0],
        f"the system prompt of passing run {other.run_id[:12]}",
        system=theirs or "",
    )
    title = "the system prompt differs from the last passing run of the same task text"
    return [Candidate("system_prompt_changed", title, evidence, fix)]


def _repeats(failing: Recording) -> list[Candidate]:
    """The same call (tool and arguments) asked for again, started or not."""
    seen: dict[Any, Evidence] = {}
    for number in failing.model_turns:
        response = failing.turns[number].response
        if response is None:
            continue
        calls = response.message.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            if not isinstance(call, dict):
                continue
            function = call.get("function") or {}
            key = (function.get("name"), _canonical(function.get("arguments")))
            here = Evidence(
                failing.run_id,
                response.seq,
                number,
                call.get("id"),
                f"{key[0]}({_short(str(function.get('arguments') or ''))})",
            )
            if key in seen:
                title = f"repeated call: {key[0]} asked again at turn {number}, same arguments"
                why_not = (
                    "a repeat is what the model made of what it read: the other candidates say why"
                )
                return [Candidate("repeated_call", title, [seen[key], here], None, why_not)]
            seen[key] = here
    return []


def _canonical(arguments: Any) -> str:
    import json

    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except (TypeError, ValueError):
        return str(arguments)


def _limit(failing: Recording) -> list[Candidate]:
    end = failing.run_end
    if end is None or end.status not in LIMIT_STATUSES:
        return []
    what = f"{end.status}: {_short(end.reason or '')}"
    evidence = [_evidence(failing, end, what)]
    why_not = "a limit is where the run stopped, not why it went that way"
    return [Candidate("limit_hit", f"limit hit: {what}", evidence, None, why_not)]
