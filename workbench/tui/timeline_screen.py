"""Timeline: a run's turns as a waterfall of model calls and tool calls, with tokens per turn
and their cost when `<home>/prices.toml` prices the model.

The engine builds the timeline (`workbench.engine.views.timeline`); this screen only draws it, to
the width the terminal has. Calls that ran side by side sit on their own lanes (`∥`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Header, Static

from workbench.engine.views.timeline import PricedTimeline
from workbench.tui.navigation import OpenRun
from workbench.tui.render import fmt_count, fmt_ms, short_id
from workbench.tui.screens import PaletteCommand, WorkbenchScreen

LABEL_WIDTH = 30
DURATION_WIDTH = 9


def cost_text(view: PricedTimeline, input_tokens: int, output_tokens: int) -> str:
    """`  · $0.0012` when the model has a price; empty otherwise."""
    amount = view.cost(input_tokens, output_tokens)
    return f"  · {view.prices.format(amount)}" if amount is not None else ""


def _bar(start: float, end: float, total: float, width: int) -> tuple[int, int]:
    scale = width / total if total > 0 else 0.0
    first = min(width - 1, int(start * scale))
    last = max(first + 1, min(width, round(end * scale)))
    return first, last


def render_timeline(view: PricedTimeline, width: int) -> Text:
    """The waterfall, `width` cells wide: a line per turn, a bar per call."""
    timeline = view.timeline
    track = max(10, width - LABEL_WIDTH - DURATION_WIDTH - 3)
    total = max(timeline.end_ms, 1.0)
    out = Text(no_wrap=True, overflow="ellipsis")
    tokens_in, tokens_out = timeline.input_tokens, timeline.output_tokens
    out.append(f"run {short_id(timeline.run_id)}", style="bold")
    out.append(
        f"  {fmt_ms(timeline.end_ms)}  ·  {len(timeline.turns)} turns  ·  "
        f"{fmt_count(tokens_in)} in / {fmt_count(tokens_out)} out tokens"
        f"{cost_text(view, tokens_in, tokens_out)}\n",
        style="dim",
    )
    for turn in timeline.turns:
        out.append(f"\nturn {turn.turn}", style="bold")
        out.append(
            f"  {fmt_ms(turn.duration_ms)}  ·  {fmt_count(turn.input_tokens)} in / "
            f"{fmt_count(turn.output_tokens)} out tokens"
            f"{cost_text(view, turn.input_tokens, turn.output_tokens)}\n",
            style="dim",
        )
        for span in turn.spans:
            lane = "  " * span.lane + ("∥ " if span.lane else "")
            mark = "" if span.ok else " ✖"
            label = (" " + lane + span.label + mark)[:LABEL_WIDTH].ljust(LABEL_WIDTH)
            colour = "blue" if span.kind == "model" else "yellow"
            style = colour if span.ok else "bold red"
            first, last = _bar(span.start_ms, span.end_ms, total, track)
            out.append(label, style="red" if not span.ok else "")
            out.append("│" + " " * first, style="dim")
            out.append("█" * (last - first), style=style)
            out.append(" " * (track - last) + "│", style="dim")
            out.append(f" {fmt_ms(span.duration_ms):>{DURATION_WIDTH}}\n", style="dim")
    if not timeline.turns:
        out.append("\nThis run recorded no turns.\n", style="dim")
    return out


class Waterfall(Static):
    """Redraws the waterfall to its width."""

    view: PricedTimeline | None = None
    failed = False

    def render(self) -> Text:
        if self.failed:
            return Text("could not build the timeline", style="red")
        if self.view is None:
            return Text("building the timeline…", style="dim")
        return render_timeline(self.view, self.size.width or 100)


class TimelineScreen(WorkbenchScreen):
    """Timeline: the run's model and tool calls as a waterfall, tokens and cost per turn."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "open_run", "Open run"),
    ]

    class Built(Message):
        def __init__(self, view: PricedTimeline) -> None:
            super().__init__()
            self.view = view

    def __init__(self, run_id: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.view: PricedTimeline | None = None

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
        self._build()

    @work(thread=True, exclusive=True, group="timeline", exit_on_error=False)
    def _build(self) -> None:
        self.post_message(self.Built(self.backend.timeline(self.run_id)))

    def on_timeline_screen_built(self, message: Built) -> None:
        self.view = message.view
        widget = self.query_one("#timeline", Waterfall)
        widget.view = message.view
        widget.refresh(layout=True)
        if message.view.problem:
            self.notify(message.view.problem, severity="warning", timeout=8)

    def worker_failed(self, worker: Any) -> None:
        widget = self.query_one("#timeline", Waterfall)
        widget.failed = True
        widget.refresh(layout=True)

    def action_open_run(self) -> None:
        self.post_message(OpenRun(self.run_id))

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield ("Open the run", "Its decision chain", self.action_open_run)
