"""Two runs' decision chains compared by content: per turn, the texts each run produced
(tool arguments and results, what the model said, its answer) with a word diff where they
differ, and, when one run is a fork of the other, the edits the fork made.

    comparison = compare_runs(parent, fork)
    comparison.edits                  # what the fork changed, as its run_start recorded it
    comparison.changes[turn]          # TextChange per differing text of that turn
    lines = render_comparison(comparison)

`workbench diff --chain` prints `render_comparison`; the TUI's comparison shows the same
`Comparison`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, assert_never

from traces.events import Edit
from traces.schema_diff import SpanOp
from traces.schema_diff import word_diff as schema_word_diff
from traces.text import one_line
from workbench.engine.diff.alignment import (
    ChainDiff,
    ChainRow,
    ChainTurn,
    diff_chains,
    render_chain,
)
from workbench.engine.recording.runs.load import Recording, index_events
from workbench.engine.recording.runs.window import TURN_WINDOW, TurnWindow

if TYPE_CHECKING:
    from traces.store import TraceStore

# Unchanged stretches longer than this are cut to their ends in the rendered word diff.
CONTEXT_CHARS = 60


@dataclass(frozen=True)
class TextChange:
    """One text that differs between the runs in a turn; `a`/`b` are None when absent."""

    what: str  # e.g. "answer", "said", "read_file result", "read_file arguments"
    a: str | None
    b: str | None
    spans: list[tuple[SpanOp, str]]  # word diff of b against a

    def to_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "a": self.a,
            "b": self.b,
            "word_diff": [list(span) for span in self.spans],
        }


@dataclass(frozen=True)
class ForkEdits:
    """The edits run `fork` made when it was forked from `parent` at `turn`."""

    fork: str  # "A" or "B": which side of the comparison is the fork
    run_id: str
    parent_run_id: str
    turn: int | None
    edits: list[Edit]

    def to_json(self) -> dict[str, Any]:
        return {
            "fork": self.fork,
            "run_id": self.run_id,
            "parent_run_id": self.parent_run_id,
            "turn": self.turn,
            "edits": [edit.model_dump(mode="json") for edit in self.edits],
        }


@dataclass
class Comparison:
    diff: ChainDiff
    forks: list[ForkEdits] = field(default_factory=list)
    changes: dict[int, list[TextChange]] = field(default_factory=dict)  # turn -> changes

    def to_json(self) -> dict[str, Any]:
        return self.diff.to_json() | {
            "forks": [fork.to_json() for fork in self.forks],
            "changes": {
                str(turn): [change.to_json() for change in changes]
                for turn, changes in self.changes.items()
            },
        }


def _fork_edits(side: str, run: Recording) -> ForkEdits | None:
    start = run.run_start
    if start.parent_run_id is None:
        return None
    return ForkEdits(side, run.run_id, start.parent_run_id, start.fork_turn, list(start.edits))


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)


def word_diff(before: str, after: str) -> list[tuple[SpanOp, str]]:
    """Spans of `after` against `before`, word by word; a changed line break alone is no
    difference between two runs' texts."""
    return schema_word_diff(before, after, ignore_spacing=True)


def _change(what: str, a: str | None, b: str | None) -> TextChange | None:
    if a == b:
        return None
    return TextChange(what, a, b, word_diff(a or "", b or ""))


def text_changes(row: ChainRow) -> list[TextChange]:
    """Every text of the turn that is not the same in both runs, in reading order."""
    a, b = row.a, row.b
    found: list[TextChange | None] = [_change("said", _said(a), _said(b))]
    calls_a = a.calls if a is not None else ()
    calls_b = b.calls if b is not None else ()
    for index in range(max(len(calls_a), len(calls_b))):
        left = calls_a[index] if index < len(calls_a) else None
        right = calls_b[index] if index < len(calls_b) else None
        name = left.name if left is not None else right.name if right is not None else "?"
        if left is not None and right is not None and left.name != right.name:
            name = f"{left.name} / {right.name}"
        found.append(
            _change(
                f"{name} arguments",
                _arguments_text(left.arguments) if left is not None else None,
                _arguments_text(right.arguments) if right is not None else None,
            )
        )
        found.append(
            _change(
                f"{name} result",
                left.result if left is not None else None,
                right.result if right is not None else None,
            )
        )
    found.append(_change("answer", _answer(a), _answer(b)))
    return [change for change in found if change is not None]


def _said(turn: ChainTurn | None) -> str | None:
    return turn.text if turn is not None else None


def _answer(turn: ChainTurn | None) -> str | None:
    return turn.answer if turn is not None and turn.outcome == "answer" else None


def compare_runs(a: Recording, b: Recording) -> Comparison:
    diff = diff_chains(a, b)
    forks = [f for f in (_fork_edits("A", a), _fork_edits("B", b)) if f is not None]
    changes = {row.turn: text_changes(row) for row in diff.rows if not row.same}
    return Comparison(diff, forks, {turn: found for turn, found in changes.items() if found})


def compare_stored(
    store: TraceStore, run_a: str, run_b: str, start: int = 0, size: int = TURN_WINDOW
) -> tuple[Comparison, TurnWindow]:
    """`compare_runs` of the two stored runs' turns from position `start` on, `size` of
    them (a `TurnWindow` over the turns either run has): only those turns' events are read,
    and each run's own (its start and end), however long the runs."""
    window = TurnWindow(_turns_of_either(store, run_a, run_b), start, size)
    return _compared(store, run_a, run_b, window), window


# Turns a whole-run comparison reads at a time: fewer reads than a screen's window, for
# some more memory (the 200,000-event run of bench/scale.py: 7.4 s at 100, 5.7 s at 500;
# each read scans the run's rows, and reads of its chain's events only are small).
WHOLE_RUN_WINDOW = 10 * TURN_WINDOW


def compare_stored_runs(
    store: TraceStore, run_a: str, run_b: str, size: int = WHOLE_RUN_WINDOW
) -> Comparison:
    """`compare_runs` of the two whole stored runs, read `size` turns at a time (the runs'
    turns are aligned by number, so each window compares alone): comparing two runs of
    200,000 events holds the comparison, never the runs' events."""
    numbers = _turns_of_either(store, run_a, run_b)
    window: TurnWindow | None = TurnWindow(numbers, 0, size)
    parts: list[Comparison] = []
    while window is not None:
        parts.append(_compared(store, run_a, run_b, window))
        after = window.moved(1)
        window = TurnWindow(numbers, after, size) if after is not None else None
    firsts = (p.diff.first_divergence for p in parts)
    first = next((turn for turn in firsts if turn is not None), None)
    rows = [
        replace(row, first_divergence=False) if row.first_divergence and row.turn != first else row
        for part in parts
        for row in part.diff.rows
    ]
    last = parts[-1]  # every window reads each run's own events: its start and end
    diff = replace(last.diff, rows=rows, first_divergence=first)
    changes = {turn: found for part in parts for turn, found in part.changes.items()}
    return Comparison(diff, last.forks, changes)


def _turns_of_either(store: TraceStore, run_a: str, run_b: str) -> tuple[int, ...]:
    for run in (run_a, run_b):
        store.run(run)  # a run the store does not hold is named (`UnknownRunError`)
    return tuple(sorted(set(store.turn_numbers(run_a)) | set(store.turn_numbers(run_b))))


def _compared(store: TraceStore, run_a: str, run_b: str, window: TurnWindow) -> Comparison:
    a, b = (index_events(store.chain_events(run, window.turns)) for run in (run_a, run_b))
    return compare_runs(a, b)


def marked(spans: list[tuple[SpanOp, str]], context: int = CONTEXT_CHARS) -> str:
    """A word diff as one text: `[-removed-]` and `{+added+}`, long unchanged stretches
    cut to `context` characters at each end (the very start and end keep one side)."""
    parts: list[str] = []
    for index, (op, text) in enumerate(spans):
        if op == "delete":
            parts.append(f" [-{text.strip()}-] ")
        elif op == "insert":
            parts.append(f" {{+{text.strip()}+}} ")
        else:
            parts.append(_cut(text, context, first=index == 0, last=index == len(spans) - 1))
    return " ".join("".join(parts).split())


def _cut(text: str, context: int, *, first: bool, last: bool) -> str:
    keep_head = 0 if first else context
    keep_tail = 0 if last else context
    if len(text) <= keep_head + keep_tail + 3 or (first and last):
        return text
    head = text[:keep_head]
    tail = text[len(text) - keep_tail :] if keep_tail else ""
    return f"{head} … {tail}"


def _describe_edit(edit: Edit) -> str:
    value = edit.value if isinstance(edit.value, str) else json.dumps(edit.value)
    flat = one_line(value, 200)
    match edit.kind:
        case "system":
            target = "system prompt"
        case "user":
            target = "user message"
        case "tool_description":
            target = f"description of tool {edit.target}"
        case "tool_schema":
            target = f"parameter schema of tool {edit.target}"
        case "mock_result":
            target = f"result of tool call {edit.target} (mocked)"
        case _:
            assert_never(edit.kind)
    return f"{target}: {flat}"


def _block(label: str, text: str | None, width: int = 400) -> str:
    return f"{label} {'-' if text is None else one_line(text, width)}"


def render_comparison(comparison: Comparison) -> list[str]:
    """The chain diff, then per differing turn each changed text (A, B and the word diff),
    and what the fork edited."""
    lines: list[str] = []
    for fork in comparison.forks:
        where = f"at turn {fork.turn}" if fork.turn is not None else ""
        head = f"{fork.fork} ({fork.run_id[:12]}) is a fork of {fork.parent_run_id[:12]} {where}"
        if not fork.edits:
            lines.append(f"{head.rstrip()}, with no edits")
            continue
        lines.append(f"{head.rstrip()}; it changed:")
        lines += [f"  - {_describe_edit(edit)}" for edit in fork.edits]
    if lines:
        lines.append("")
    lines += render_chain(comparison.diff)
    if comparison.changes:
        lines += ["", "what differs:"]
    for turn, changes in comparison.changes.items():
        for change in changes:
            if change.a is None or change.b is None:
                side, text = ("A", change.a) if change.b is None else ("B", change.b)
                lines.append(_block(f"turn {turn}, {change.what}, only in {side}:", text))
                continue
            lines.append(f"turn {turn}, {change.what}:")
            lines.append("  " + _block("A", change.a))
            lines.append("  " + _block("B", change.b))
            lines.append("  " + _block("diff", marked(change.spans), 600))
    return lines
