"""Annotations in the run screen (issue 39, part 1: shown wherever the run is): the marks a
run, a turn or a tool call carries in the tree and the summary line — its labels, scores and
how many notes — and the annotations themselves in the detail pane, as `show` prints them.
Pure functions of the rows `TraceStore.annotations` gives (no Textual here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from workbench.engine.review.notes import annotation_line

MARK = "✎"  # as `show` marks an annotated turn or call
MARK_STYLE = "magenta"

Note = dict[str, Any]  # one annotation row: id, turn, call_id, author, labels, scores, text


def notes_on(notes: Sequence[Note], turn: int | None, call_id: str | None = None) -> list[Note]:
    """The annotations on the run itself (turn None), on a turn, or on one of its calls."""
    return [n for n in notes if n.get("turn") == turn and n.get("call_id") == call_id]


def mark_text(notes: Sequence[Note]) -> Text:
    """` ✎ [bug] helpful=0.2 ·1 note` after a label; empty when nothing is annotated."""
    if not notes:
        return Text()
    labels = list(dict.fromkeys(label for n in notes for label in n.get("labels") or []))
    scores: dict[str, float] = {}
    for note in notes:  # the latest value of each score (the rows come oldest first)
        scores.update(note.get("scores") or {})
    written = sum(1 for n in notes if n.get("text"))
    parts = [f"[{label}]" for label in labels]
    parts += [f"{name}={value:g}" for name, value in scores.items()]
    if written:
        parts.append(f"{written} note{'s' if written != 1 else ''}")
    return Text.assemble(("  ", ""), (f"{MARK} " + " ".join(parts), MARK_STYLE))


def marked(label: Text, notes: Sequence[Note]) -> Text:
    """`label` with the marks of `notes` after it."""
    return Text.assemble(label, mark_text(notes)) if notes else label


def marks_detail(notes: Sequence[Note]) -> RenderableType:
    """The annotations, one line each (id, where, who, labels, scores, text)."""
    return Group(
        Text(f"\nannotations ({len(notes)})", style=f"bold {MARK_STYLE}"),
        *(Text("  " + annotation_line(dict(note))) for note in notes),
    )
