"""What the review screen draws of a run: pure functions from the engine's `RunCard` (and
the notes the walk wrote on it) to Rich text, testable without an App.

Enough to judge a run in seconds: its task, status and reason, the first thing that went
wrong, the final answer, the tool calls in brief, and the annotations it has.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from traces.annotations import Note
from traces.events import ToolEnd
from workbench.engine.review.card import CallBrief, RunCard
from workbench.engine.review.labels import SCREEN_KEYS, LabelKeys
from workbench.engine.review.notes import annotation_line
from workbench.tui.render import (
    FAIL_ICON,
    OK_ICON,
    event_summary,
    fmt_count,
    fmt_ms,
    fmt_time,
    one_line,
    plural,
    status_badge,
)

ANSWER_CHARS = 400
ARGUMENT_CHARS = 60
OUTCOME_CHARS = 80


def card_renderable(card: RunCard, written: Sequence[Note] = ()) -> RenderableType:
    row = card.row
    head = Text.assemble(
        (row.run_id, "bold cyan"),
        "  ",
        status_badge(row.status),
        (f"  ·  {row.model or 'no model'}  ·  {plural(row.turns, 'turn')}", "dim"),
        (f"  ·  {fmt_count(row.total_tokens)} tokens  ·  {fmt_ms(row.duration_ms)}", "dim"),
        (f"  ·  {fmt_time(row.started_at)}", "dim"),
    )
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold", no_wrap=True)
    facts.add_column(overflow="fold")
    facts.add_row("task", Text(one_line(row.task, 300) or "—"))
    if row.reason:
        facts.add_row("reason", Text(one_line(row.reason, 300)))
    failure = card.failure
    if failure is not None:
        said = event_summary(failure)
        if isinstance(failure, ToolEnd) and failure.error:  # the error kind says little alone
            why = one_line(f"{failure.error}: {failure.result}", 200)
            said = f"{FAIL_ICON} {failure.name} → {why}"
        turn = "" if failure.turn is None else f"turn {failure.turn} · "
        facts.add_row("failed at", Text(turn + said, style="red"))
    answer = row.final_answer or ""
    facts.add_row("answer", Text(one_line(answer, ANSWER_CHARS)) if answer else Text("—", "dim"))
    parts: list[RenderableType] = [head, Text(""), facts, Text(""), calls_renderable(card)]
    notes = [annotation_line(a) for a in card.annotations]
    notes += [annotation_line(note.model_dump(mode="json")) for note in written]
    if notes:
        parts += [Text(""), Text("annotations", style="bold"), *(Text(f"  {n}") for n in notes)]
    return Group(*parts)


def calls_renderable(card: RunCard) -> RenderableType:
    if not card.calls:
        return Text("no tool calls", style="dim")
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", style="dim", no_wrap=True)  # turn
    table.add_column(no_wrap=True)
    table.add_column(overflow="ellipsis", no_wrap=True)
    for call in card.calls:
        table.add_row(str(call.turn or ""), *_call_cells(call))
    parts: list[RenderableType] = [
        Text(f"tool calls ({max(card.row.tool_calls, len(card.calls))})", style="bold"),
        table,
    ]
    if card.more_calls:
        parts.append(Text(f"  … and {plural(card.more_calls, 'more call')}", style="dim"))
    return Group(*parts)


def _call_cells(call: CallBrief) -> tuple[Text, Text]:
    icon, style = (OK_ICON, "green") if call.ok else (FAIL_ICON, "red")
    if call.ok is None:
        icon, style = "…", "yellow"
    made = Text.assemble((f"{icon} ", style), (call.name, "bold"))
    made.append(f"({one_line(call.arguments, ARGUMENT_CHARS)})")
    outcome = Text(f"→ {one_line(call.outcome, OUTCOME_CHARS)}", style="" if call.ok else "red")
    return made, outcome


class KeysLine:
    """The label keys, then the screen's own, as the screen shows them above its footer:
    wrapped between keys, never inside one, for the width it is drawn in."""

    def __init__(self, labels: LabelKeys) -> None:
        self.entries = [
            Text.assemble((f" {key} ", "reverse bold"), f" {label}")
            for key, label in labels.keys.items()
        ]
        self.entries += [Text(f"{key} {what}", style="dim") for key, what in SCREEN_KEYS.items()]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        line = Text()
        for entry in self.entries:
            if line and line.cell_len + 3 + entry.cell_len > options.max_width:
                yield line
                line = Text()
            if line:
                line.append("   ")
            line.append_text(entry)
        yield line
