"""Timeline: a run's turns as a waterfall of model calls and tool calls, with tokens per turn
and their cost when `<home>/prices.toml` prices the model.

The engine builds the timeline (`workbench.engine.views.timeline`); this screen only draws it, to
the width the terminal has. Calls that ran side by side sit on their own lanes (`∥`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Header, Static

from traces.text import bar_cells
from workbench.engine.views.timeline import PricedTimeline
from workbench.tui.navigation import OpenRun
from workbench.tui.render import fmt_count, fmt_ms, short_id
from workbench.tui.screens import PaletteCommand, WorkbenchScreen

LABEL_WIDTH = 30
DURATION_WIDTH = 9
# Beside the waterfall, each turn's tokens as a bar (input, then output) and a count; left
# out below this width, where the waterfall needs the room.
TOKENS_BAR_WIDTH = 12
TOKENS_COUNT_WIDTH = 7
TOKENS_FROM_WIDTH = 70
INPUT_BAR, OUTPUT_BAR = "▆", "█"


def cost_text(view: PricedTimeline, input_tokens: int, output_tokens: int) -> str:
    """`  · $0.0012` when the model has a price; empty otherwise."""
    amount = view.cost(input_tokens, output_tokens)
    return f"  · {view.prices.format(amount)}" if amount is not None else ""


def tokens_bar(input_tokens: int, output_tokens: int, most: int, width: int) -> Text:
    """A turn's tokens beside the waterfall: `▆▆▆▆██ 1.2k`, scaled to the turn with the
    most, input then output."""
    total = input_tokens + output_tokens
    cells = round(total / most * width) if most else 0
    cells = max(cells, 1) if total else 0
    out_cells = round(output_tokens / total * cells) if total else 0
    if output_tokens and cells > 1:
        out_cells = max(out_cells, 1)
    bar = Text(no_wrap=True)
    bar.append(INPUT_BAR * (cells - out_cells), style="cyan")
    bar.append(OUTPUT_BAR * out_cells, style="magenta")
    bar.append(" " * (width - cells))
    bar.append(f" {fmt_count(total):>{TOKENS_COUNT_WIDTH - 1}}", style="dim")
    return bar


def render_timeline(view: PricedTimeline, width: int) -> Text:
    """The waterfall, `width` cells wide: a line per turn, a bar per call, and beside each
    turn its tokens as a bar when the width allows. The header has the whole run's figures;
    a window of a longer run's turns spans the track from its first call to its last."""
    timeline = view.timeline
    side = TOKENS_BAR_WIDTH + TOKENS_COUNT_WIDTH + 2 if width >= TOKENS_FROM_WIDTH else 0
    track = max(10, width - LABEL_WIDTH - DURATION_WIDTH - 3 - side)
    most = max((t.input_tokens + t.output_tokens for t in timeline.turns), default=0)
    origin, total = 0.0, max(timeline.end_ms, 1.0)
    if view.window is not None and timeline.turns:
        origin = min(turn.start_ms for turn in timeline.turns)
        total = max(max(turn.end_ms for turn in timeline.turns) - origin, 1.0)
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append(f"run {short_id(timeline.run_id)}", style="bold")
    tokens = "counting tokens…"
    if view.tokens is not None:
        tokens_in, tokens_out = view.tokens
        tokens = (
            f"{fmt_count(tokens_in)} in / {fmt_count(tokens_out)} out tokens"
            f"{cost_text(view, tokens_in, tokens_out)}"
        )
    out.append(
        f"  {fmt_ms(timeline.end_ms)}  ·  {fmt_count(view.turn_count)} turns  ·  {tokens}\n",
        style="dim",
    )
    shown = view.window.shown if view.window is not None else None
    if view.window is not None and shown is not None:
        window = view.window
        keys = [
            text
            for text, step in (("] next", 1), ("[ previous", -1))
            if window.moved(step) is not None
        ]
        out.append(
            f"turns {shown[0]:,}-{shown[1]:,} of {len(window.turn_numbers):,} shown"
            + (f"  ({', '.join(keys)} {window.size})" if keys else "")
            + "\n",
            style="yellow",
        )
    if side:
        legend = Text.assemble(
            (f"{INPUT_BAR} in ", "cyan"), (f"{OUTPUT_BAR} out", "magenta"), (" tokens", "dim")
        )
        out.append(" " * (width - side + 2))
        out.append_text(legend)
        out.append("\n")
    for turn in timeline.turns:
        head = Text(no_wrap=True, overflow="ellipsis")
        head.append(f"turn {turn.turn}", style="bold")
        head.append(
            f"  {fmt_ms(turn.duration_ms)}  ·  {fmt_count(turn.input_tokens)} in / "
            f"{fmt_count(turn.output_tokens)} out tokens"
            f"{cost_text(view, turn.input_tokens, turn.output_tokens)}",
            style="dim",
        )
        out.append("\n")
        if side:
            head.truncate(width - side, overflow="ellipsis", pad=True)
            out.append_text(head)
            out.append("  ")
            out.append_text(
                tokens_bar(turn.input_tokens, turn.output_tokens, most, TOKENS_BAR_WIDTH)
            )
        else:
            out.append_text(head)
        out.append("\n")
        for span in turn.spans:
            lane = "  " * span.lane + ("∥ " if span.lane else "")
            mark = "" if span.ok else " ✖"
            label = (" " + lane + span.label + mark)[:LABEL_WIDTH].ljust(LABEL_WIDTH)
            colour = "blue" if span.kind == "model" else "yellow"
            style = colour if span.ok else "bold red"
            first, last = bar_cells(span.start_ms - origin, span.end_ms - origin, total, track)
            out.append(label, style="red" if not span.ok else "")
            out.append("│" + " " * first, style="dim")
            out.append("█" * (last - first), style=style)
            out.append(" " * (track - last) + "│", style="dim")
            out.append(f" {fmt_ms(span.duration_ms):>{DURATION_WIDTH}}\n", style="dim")
    if not timeline.turns:
        out.append("\nThis run recorded no turns.\n", style="dim")
    return out


class Waterfall(Static):
    """Redraws the waterfall to its width (once per view and width: layout asks often)."""

    view: PricedTimeline | None = None
    failed = False
    _drawn: tuple[PricedTimeline, int, Text] | None = None

    def render(self) -> Text:
        if self.failed:
            return Text("could not build the timeline", style="red")
        if self.view is None:
            return Text("building the timeline…", style="dim")
        width = self.size.width or 100
        if self._drawn is None or self._drawn[0] is not self.view or self._drawn[1] != width:
            self._drawn = (self.view, width, render_timeline(self.view, width))
        return self._drawn[2]


class TimelineScreen(WorkbenchScreen):
    """Timeline: the run's model and tool calls as a waterfall, tokens and cost per turn;
    a long run shows its turns a window at a time."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "open_run", "Open run"),
        Binding("right_square_bracket", "window(1)", "Next turns", key_display="]"),
        Binding("left_square_bracket", "window(-1)", "Previous turns", key_display="["),
    ]

    class Built(Message):
        def __init__(self, view: PricedTimeline) -> None:
            super().__init__()
            self.view = view

    def __init__(self, run_id: str, tokens: tuple[int, int] | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.view: PricedTimeline | None = None
        # A long run's whole tokens: from the run screen's outline, else counted once.
        self.run_tokens = tokens
        self._counting = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(
            Text.assemble(("timeline ", "dim"), (short_id(self.run_id), "bold")),
            classes="summary",
        )
        with VerticalScroll(id="timeline-body"):
            yield Waterfall(id="timeline")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"timeline {short_id(self.run_id)}"
        self.query_one("#timeline-body").focus()
        self._build(0)

    class Counted(Message):
        def __init__(self, tokens: tuple[int, int]) -> None:
            super().__init__()
            self.tokens = tokens

    @work(thread=True, exclusive=True, group="timeline", exit_on_error=False)
    def _build(self, start: int) -> None:
        self.post_message(self.Built(self.backend.timeline(self.run_id, start)))

    @work(thread=True, exclusive=True, group="tokens", exit_on_error=False)
    def _count_tokens(self) -> None:
        self.post_message(self.Counted(self.backend.run_tokens(self.run_id)))

    def on_timeline_screen_built(self, message: Built) -> None:
        view = message.view
        if view.window is not None:
            # The whole run's tokens read every turn: counted once, after the first window.
            if self.run_tokens is None and not self._counting:
                self._counting = True
                self._count_tokens()
            view = dataclasses.replace(view, run_tokens=self.run_tokens)
        self._show(view)

    def on_timeline_screen_counted(self, message: Counted) -> None:
        self.run_tokens = message.tokens
        if self.view is not None:
            self._show(dataclasses.replace(self.view, run_tokens=message.tokens), scroll=False)

    def _show(self, view: PricedTimeline, scroll: bool = True) -> None:
        self.view = view
        widget = self.query_one("#timeline", Waterfall)
        widget.view = view
        widget.refresh(layout=True)
        if scroll:
            self.query_one("#timeline-body", VerticalScroll).scroll_home(animate=False)
            if view.problem:
                self.notify(view.problem, severity="warning", timeout=8)

    def worker_failed(self, worker: Any) -> None:
        if worker.group == "tokens":
            self._counting = False  # the app said why; the next window tries again
            return
        widget = self.query_one("#timeline", Waterfall)
        widget.failed = True
        widget.refresh(layout=True)

    def action_window(self, step: int) -> None:
        """The next (`step` 1) or previous (-1) window of a long run's turns."""
        window = self.view.window if self.view is not None else None
        if window is None:
            self.notify("Every turn of this run is shown.")
            return
        start = window.moved(step)
        if start is None:
            self.notify("No later turns." if step > 0 else "No earlier turns.")
            return
        self._build(start)

    def action_open_run(self) -> None:
        self.post_message(OpenRun(self.run_id))

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield ("Open the run", "Its decision chain", self.action_open_run)
        yield (
            "Next turns",
            "The next window of a long run's turns (])",
            lambda: self.action_window(1),
        )
        yield (
            "Previous turns",
            "The previous window of a long run's turns ([)",
            lambda: self.action_window(-1),
        )
