"""N runs of one task side by side (`workbench compare`): the path the passing runs share,
and for every run that left it, the first step where it did. Runs that left the same way
at the same step are one variant: "7 runs called `search_files` where the passing runs
called `list_dir`; 3 of them failed".

    comparison = compare_group(store, run_ids)
    comparison.path                  # the passing path, step by step (content, not digests)
    comparison.variants              # most runs first; each with its departure and runs
    left = left_path(store, run_id, results=True)  # one run against its task's passing runs

The path is found step by step: at each step, the step most of the passing runs still on
the path took (all runs' majority when none passed). Steps are compared by their key
(`traces.store.steps`: kind, turn, tool, arguments, outcome; an answer's text; an end's
status; a call's result text with `results`, as `workbench why` asks), read from the store
a window of step positions at a time for the runs still on the path only, so thousands of
runs are compared holding one window of their keys.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from traces.schema_diff import SpanOp, word_diff
from traces.store.steps import (
    Member,
    StepContent,
    group_members,
    step_contents,
    step_keys,
    task_runs,
)
from workbench.engine.analysis.groups import GroupError

if TYPE_CHECKING:
    from traces.store import TraceStore

# Step positions read at a time (at least): a run of a hundred steps is read in one query;
# a longer one a window at a time, for the runs still on the path only. Fewer runs read
# more positions at once, up to WINDOW_KEYS keys in all: each query reads every step of its
# runs, so two runs of 10,000 steps take one query, not a hundred.
STEP_WINDOW = 100
WINDOW_KEYS = 100_000
# Variants given with their steps' content; the others are counted (`total_variants`).
VARIANTS_SHOWN = 50
# Characters of a step's text read from the store (a tool result may be megabytes).
MAX_TEXT = 4000

# How a run left the path at its first step off it.
How = Literal[
    "other_tool",  # called another tool (or a tool where the path answered or ended)
    "other_arguments",  # called the same tool with other arguments
    "tool_error",  # the same call failed (an error, bad arguments, no result)
    "other_outcome",  # the same call went otherwise (it succeeded where the path's failed)
    "not_run",  # asked for the same call, which never ran (a refused repeat)
    "other_answer",  # answered otherwise
    "answered",  # answered where the path called a tool
    "error",  # a model or run error it did not recover from
    "limit",  # stopped by a limit: max_turns, duplicate_tool_calls, token_budget, timeout
    "stopped",  # ended otherwise where the path went on (error, cancelled, incomplete)
    "other_turn",  # the same call, in another turn
    "other_result",  # the same call went the same way with another result text (`results`)
]
LIMITS = ("max_turns", "duplicate_tool_calls", "token_budget", "timeout")
# A failed call's outcome as the sentence says it.
_FAILED = {"error": "an error", "bad_arguments": "bad arguments", "missing": "no result"}


@dataclass(frozen=True)
class Step:
    """A step as shown: what the run did there, from the run it was read from."""

    run_id: str
    position: int  # 0-based among the run's steps
    seq: int | None  # its event (a call's start), where a run opens at it; None: the end
    turn: int | None
    kind: str  # call, answer, error, end
    tool: str | None
    outcome: str  # a call's ok/error/bad_arguments/missing/not_run; an end's status; ...
    arguments: str | None  # a call's, compact JSON
    text: str | None  # a call's result or error, an answer, an error message, an end's reason

    @classmethod
    def of(cls, content: StepContent) -> Step:
        return cls(
            content.run_id,
            content.position,
            content.seq,
            content.turn,
            content.kind,
            content.tool,
            content.outcome,
            content.arguments,
            content.text,
        )

    def label(self) -> str:
        """One line: `read_file {"path":"a"} → error`, `answer`, `end max_turns`."""
        if self.kind == "call":
            return f"{self.tool} {self.arguments or ''} → {self.outcome.replace('_', ' ')}"
        if self.kind == "answer":
            return "answer"
        if self.kind == "error":
            return f"error ({self.outcome})"
        return f"end {self.outcome}"

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class TextDiff:
    """A text of a step against the path's same text: a word diff of `here` against `path`."""

    what: str  # arguments, result, answer, error, reason
    path: str | None
    here: str | None
    spans: list[tuple[SpanOp, str]]

    def to_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "path": self.path,
            "here": self.here,
            "word_diff": [list(span) for span in self.spans],
        }


@dataclass(frozen=True)
class Departure:
    """Where and how a run left the path: its step there beside the path's."""

    position: int
    how: How
    step: Step  # the run's step (of the variant's first run)
    expected: Step | None  # the path's step there (None past the path's end)
    diffs: list[TextDiff]

    def says(self, who: str = "the passing runs") -> str:
        """What the runs did, as the rest of a sentence: "called `x` where ... `y`"."""
        step, expected = self.step, self.expected
        there = _what_path_did(expected)
        match self.how:
            case "other_tool":
                return f"called `{step.tool}` where {who} {there}"
            case "other_arguments":
                return f"called `{step.tool}` with other arguments than {who}"
            case "tool_error":
                return f"got {_FAILED.get(step.outcome, step.outcome)} from `{step.tool}`"
            case "other_outcome":
                return f"got {step.outcome} from `{step.tool}` where {who} got {_outcome(expected)}"
            case "not_run":
                return f"asked for `{step.tool}`, which never ran, where {who} {there}"
            case "other_answer":
                return f"answered otherwise than {who}"
            case "answered":
                return f"answered where {who} {there}"
            case "error":
                return f"met an error ({step.outcome}) where {who} {there}"
            case "limit":
                return f"hit a limit ({step.outcome}) where {who} {there}"
            case "stopped":
                return f"stopped ({step.outcome}) where {who} {there}"
            case "other_turn":
                return f"called `{step.tool}` in turn {step.turn}, {who} in another turn"
            case "other_result":
                return f"got another result from `{step.tool}` than {who}"
        return "left the path"  # pragma: no cover - every How is matched above

    def to_json(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "how": self.how,
            "turn": self.step.turn,
            "step": self.step.to_json(),
            "expected": self.expected.to_json() if self.expected else None,
            "diffs": [diff.to_json() for diff in self.diffs],
        }


@dataclass(frozen=True)
class Variant:
    """Runs that left the path the same way at the same step."""

    departure: Departure
    run_ids: list[str]  # oldest first
    failed: int  # how many of them failed

    @property
    def runs(self) -> int:
        return len(self.run_ids)

    def sentence(self, who: str = "the passing runs") -> str:
        runs = f"{self.runs} run{'s' if self.runs != 1 else ''}"
        return f"{runs} {self.departure.says(who)}; {self.failed} of them failed"

    def to_json(self, examples: int, who: str = "the passing runs") -> dict[str, Any]:
        return {
            "runs": self.runs,
            "failed": self.failed,
            "says": self.sentence(who),
            "departure": self.departure.to_json(),
            "run_ids": self.run_ids[:examples],
        }


@dataclass
class GroupComparison:
    """The runs of a group against the path their passing runs share."""

    runs: int
    passed: int
    tasks: int  # distinct task fingerprints among the runs (one for runs of one task)
    path_of: Literal["passing", "all"]  # "all": no run passed; the path most runs took
    path: list[Step]
    on_path: list[str]  # runs that never left it, oldest first
    on_path_failed: int  # of those, how many failed all the same (a case's verdict)
    variants: list[Variant]  # the VARIANTS_SHOWN with most runs, most runs first
    total_variants: int
    run_ids: list[str] = field(default_factory=list)  # every run compared, oldest first
    task: str | None = None  # the task of the oldest run

    @property
    def failed(self) -> int:
        return self.runs - self.passed

    @property
    def who(self) -> str:
        return "the passing runs" if self.path_of == "passing" else "most runs"

    def variant_of(self, run_id: str) -> Variant | None:
        return next((v for v in self.variants if run_id in v.run_ids), None)

    def to_json(self, examples: int = 5) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "passed": self.passed,
            "failed": self.failed,
            "tasks": self.tasks,
            "task": self.task,
            "path_of": self.path_of,
            "path": [step.to_json() for step in self.path],
            "on_path": {
                "runs": len(self.on_path),
                "failed": self.on_path_failed,
                "run_ids": self.on_path[:examples],
            },
            "variants": [variant.to_json(examples, self.who) for variant in self.variants],
            "total_variants": self.total_variants,
        }


def compare_group(
    store: TraceStore,
    run_ids: list[str],
    *,
    shown: int = VARIANTS_SHOWN,
    focus: str | None = None,
    window: int = STEP_WINDOW,
    results: bool = False,
) -> GroupComparison:
    """The runs `run_ids` (those the store holds) against the path their passing runs
    share; the `shown` variants with most runs get their steps' content, and `focus`'s
    variant whatever its size. With `results`, a call whose result text differs from the
    path's left it there."""
    members = group_members(store, sorted(set(run_ids)))
    if not members:
        raise GroupError("none of these runs is in the store; `workbench runs` lists them")
    passed = {m.run_id for m in members if m.passed}
    guides = passed or {m.run_id for m in members}
    walk = _Walk([m.run_id for m in members], guides)
    first = 0
    while walk.following:
        size = max(window, WINDOW_KEYS // len(walk.following))
        keys: dict[str, dict[int, str]] = {}
        for row in step_keys(store, walk.following, first, first + size - 1, results=results):
            keys.setdefault(row.run_id, {})[row.position] = row.key
        for position in range(first, first + size):
            if not walk.step(position, keys):
                break
        first += size
    return _compared(store, members, passed, walk, shown, focus)


@dataclass
class _Walk:
    """The path found so far, and where each run that left it did."""

    following: list[str]  # runs still on the path, oldest first (none once it has ended)
    guides: set[str]  # the runs whose majority makes the path
    path: list[tuple[str, str]] = field(default_factory=list)  # (key, a guide run with it)
    left: dict[str, tuple[int, str | None]] = field(default_factory=dict)  # run: position, key

    def step(self, position: int, keys: dict[str, dict[int, str]]) -> bool:
        """Walk one step; False once no run is left to follow."""
        here = {run: keys.get(run, {}).get(position) for run in self.following}
        votes = Counter(key for run, key in here.items() if run in self.guides and key)
        if not votes:  # the path has ended: a run with a step more left it there
            for run, key in here.items():
                if key is not None:
                    self.left[run] = (position, key)
            self.following = []  # the runs with no step more followed it to its end
            return False
        top = max(votes.values())
        # Ties go to the step of the oldest guide run: the same path for the same runs.
        chosen, source = next(
            (key, run)
            for run, key in here.items()
            if key is not None and run in self.guides and votes[key] == top
        )
        self.path.append((chosen, source))
        for run, key in here.items():
            if key != chosen:
                self.left[run] = (position, key)
        self.following = [run for run, key in here.items() if key == chosen]
        return bool(self.following)


def _compared(
    store: TraceStore,
    members: list[Member],
    passed: set[str],
    walk: _Walk,
    shown: int,
    focus: str | None,
) -> GroupComparison:
    by_way: dict[tuple[int, str | None], list[str]] = {}
    for member in members:  # oldest first, so each variant's runs are too
        way = walk.left.get(member.run_id)
        if way is not None:
            by_way.setdefault(way, []).append(member.run_id)
    ways = sorted(by_way.items(), key=lambda item: (-len(item[1]), item[0][0]))
    kept = ways[:shown] + [w for w in ways[shown:] if focus is not None and focus in w[1]]
    wanted = [(source, position) for position, (_, source) in enumerate(walk.path)]
    wanted += [(runs[0], position) for (position, _), runs in kept]
    contents = step_contents(store, wanted, MAX_TEXT)
    path = [Step.of(contents[(source, n)]) for n, (_, source) in enumerate(walk.path)]
    variants = []
    for (position, _), runs in kept:
        step = Step.of(contents[(runs[0], position)])  # every run ends with its end step
        expected = path[position] if position < len(path) else None
        departure = Departure(
            position, _how(step, expected), step, expected, _diffs(step, expected)
        )
        variants.append(Variant(departure, runs, sum(run not in passed for run in runs)))
    on_path = [m.run_id for m in members if m.run_id not in walk.left]  # to its end
    return GroupComparison(
        runs=len(members),
        passed=len(passed),
        tasks=len({m.task_fingerprint for m in members}),
        path_of="passing" if passed else "all",
        path=path,
        on_path=on_path,
        on_path_failed=sum(run not in passed for run in on_path),
        variants=variants,
        total_variants=len(ways),
        run_ids=[m.run_id for m in members],
        task=members[0].task,
    )


def _how(step: Step, expected: Step | None) -> How:
    if step.kind == "end":
        return "limit" if step.outcome in LIMITS else "stopped"
    if step.kind == "error":
        return "error"
    if step.kind == "answer":
        return "other_answer" if expected is not None and expected.kind == "answer" else "answered"
    if expected is None or expected.kind != "call" or step.tool != expected.tool:
        return "not_run" if step.outcome == "not_run" else "other_tool"
    if step.arguments != expected.arguments:
        return "other_arguments"
    if step.outcome != expected.outcome:
        if step.outcome == "not_run":
            return "not_run"
        return "other_outcome" if step.outcome == "ok" else "tool_error"
    # The key differs in its turn, or (counting results) in the result's text.
    return "other_turn" if step.turn != expected.turn else "other_result"


def _diffs(step: Step, expected: Step | None) -> list[TextDiff]:
    """The step's texts that differ from the path step's: its arguments (calls), and its
    result, answer, error message or end reason."""
    if expected is None:
        return []
    found = []
    calls = step.kind == "call" and expected.kind == "call"
    if calls and step.arguments != expected.arguments:
        found.append(_diff("arguments", _spaced(expected.arguments), _spaced(step.arguments)))
    what = {"call": "result", "answer": "answer", "error": "error", "end": "reason"}[step.kind]
    alike = step.kind == expected.kind and (not calls or step.tool == expected.tool)
    if alike and step.text != expected.text:  # one tool's result beside another's says little
        found.append(_diff(what, expected.text, step.text))
    return found


def _spaced(arguments: str | None) -> str | None:
    """Compact JSON arguments with a space after each `:` and `,`, so a word diff shows
    the value that changed, not the whole object."""
    try:
        return json.dumps(json.loads(arguments or ""), ensure_ascii=False)
    except ValueError:
        return arguments


def _diff(what: str, path: str | None, here: str | None) -> TextDiff:
    # A changed line break alone is no difference between two runs' texts.
    return TextDiff(what, path, here, word_diff(path or "", here or "", ignore_spacing=True))


def _what_path_did(step: Step | None) -> str:
    if step is None:
        return "had ended"
    if step.kind == "call":
        return f"called `{step.tool}`"
    if step.kind == "answer":
        return "answered"
    if step.kind == "error":
        return "met an error"
    return f"ended ({step.outcome})"


def _outcome(step: Step | None) -> str:
    return step.outcome.replace("_", " ") if step is not None else "-"


# --- one run against the passing runs of its task (`workbench why`) ---------------------


@dataclass(frozen=True)
class RunDeparture:
    """One run against the path the passing runs of its task share."""

    run_id: str
    passing_runs: int  # the other runs of its task that passed: the path is theirs
    path: list[Step]
    departure: Departure | None  # None: it never left the path (or no other run passed)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "passing_runs": self.passing_runs,
            "path": [step.to_json() for step in self.path],
            "departure": self.departure.to_json() if self.departure else None,
        }


def left_path(store: TraceStore, run_id: str, *, results: bool = False) -> RunDeparture:
    """Where `run_id` left the path the passing runs of its task share (its task: its task
    fingerprint): the first step it took off it, beside the path's step there, with word
    diffs. No departure when it never left, or no other run of its task passed (no path).
    `results` as `compare_group` takes it. `UnknownRunError` for a run the store does not
    hold."""
    run_id = store.resolve_run(run_id)
    task = task_runs(store, run_id)
    others = [m.run_id for m in group_members(store, task) if m.passed and m.run_id != run_id]
    if not others:
        return RunDeparture(run_id, 0, [], None)
    comparison = compare_group(store, [*others, run_id], shown=0, focus=run_id, results=results)
    variant = comparison.variant_of(run_id)
    departure = variant.departure if variant is not None else None
    return RunDeparture(run_id, len(others), comparison.path, departure)
