"""Diff screens: two runs' tool schemas side by side, and their decision chains by turn.

Both diffs come from the engine (`workbench.engine.diff`); these screens only lay them out.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Header, Static

from workbench.tui.render import short_id, status_badge
from workbench.tui.schema_view import render_schema_diff
from workbench.tui.screens import PaletteCommand, WorkbenchScreen


def _turn_cell(turn: Any) -> Text:
    if turn is None:
        return Text("—", style="dim")
    if turn.outcome == "tools":
        text = Text()
        for i, call in enumerate(turn.calls):
            if i:
                text.append("\n")
            style = {"ok": "green", "error": "bold red", "missing": "yellow"}[call.status]
            text.append("✔ " if call.status == "ok" else "✖ ", style=style)
            text.append(call.name, style="bold")
            text.append(f"({_args(call.arguments)})", style="cyan")
            text.append(f" → {call.status} {call.result_digest or '-'}", style="dim")
        return text
    if turn.outcome == "answer":
        return Text(f"answer {turn.answer_digest or '-'}", style="green")
    return Text(turn.outcome.replace("_", " "), style="bold red")


def _args(arguments: Any) -> str:
    import json

    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 60 else text[:59] + "…"


def render_chain_diff(diff: Any) -> RenderableType:
    """A `ChainDiff`: one row per turn, A beside B, the first divergence marked."""
    table = Table(expand=True, header_style="bold", show_lines=True)
    table.add_column("", width=2, no_wrap=True)
    table.add_column("turn", justify="right", width=4, no_wrap=True)
    table.add_column(f"A {short_id(diff.run_a)}", ratio=1, overflow="fold")
    table.add_column(f"B {short_id(diff.run_b)}", ratio=1, overflow="fold")
    table.add_column("verdict", width=22, overflow="fold")
    for row in diff.rows:
        if row.first_divergence:
            mark, verdict = Text("▶", "bold red"), Text("first divergence\n", "bold red")
            verdict.append(", ".join(row.differences), style="red")
        elif row.same:
            mark, verdict = Text(""), Text("same", style="green")
        else:
            mark, verdict = Text("~", "yellow"), Text(", ".join(row.differences), style="yellow")
        style = "on #3a1010" if row.first_divergence else ""
        table.add_row(
            mark, str(row.turn), _turn_cell(row.a), _turn_cell(row.b), verdict, style=style
        )
    table.add_row(
        Text(""), Text("end"), status_badge(diff.status_a), status_badge(diff.status_b), Text("")
    )
    if diff.is_equal:
        summary = Text("The decision chains are the same.", style="bold green")
    elif diff.first_divergence is not None:
        summary = Text(f"First divergence at turn {diff.first_divergence}.", style="bold red")
    else:
        summary = Text("Same turn by turn, but the runs ended differently.", style="bold yellow")
    return Group(summary, Text(""), table, *(Text(n, style="dim") for n in diff.notes))


class PairScreen(WorkbenchScreen):
    """Shared shape: two runs, one engine call in a worker, one scrolling result."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "open_a", "Open A"),
        Binding("b", "open_b", "Open B"),
        Binding("s", "swap", "Swap A/B"),
    ]
    loading_text = "loading…"

    class Loaded(Message):
        def __init__(self, result: Any) -> None:
            super().__init__()
            self.result = result

    def __init__(self, run_a: str, run_b: str) -> None:
        super().__init__()
        self.run_a = run_a
        self.run_b = run_b

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self._title(), classes="summary", id="pair-title")
        with VerticalScroll(id="pair-body"):
            yield Static(Text(self.loading_text, style="dim"), id="pair-result")
        yield Footer()

    def _title(self) -> Text:
        return Text.assemble(
            ("A ", "bold cyan"),
            (short_id(self.run_a), "bold"),
            ("   vs   ", "dim"),
            ("B ", "bold magenta"),
            (short_id(self.run_b), "bold"),
        )

    def on_mount(self) -> None:
        self.query_one("#pair-body").focus()
        self._load()

    @work(thread=True, exclusive=True, group="pair", exit_on_error=False)
    def _load(self) -> None:
        self.post_message(self.Loaded(self.compute()))

    def compute(self) -> Any:
        raise NotImplementedError

    def render_result(self, result: Any) -> RenderableType:
        raise NotImplementedError

    def on_pair_screen_loaded(self, message: Loaded) -> None:
        self.query_one("#pair-result", Static).update(self.render_result(message.result))

    def worker_failed(self, worker: Any) -> None:
        self.query_one("#pair-result", Static).update(Text("could not compute the diff", "red"))

    def action_open_a(self) -> None:
        self.workbench.open_run(self.run_a)

    def action_open_b(self) -> None:
        self.workbench.open_run(self.run_b)

    def action_swap(self) -> None:
        self.run_a, self.run_b = self.run_b, self.run_a
        self.query_one("#pair-title", Static).update(self._title())
        self.query_one("#pair-result", Static).update(Text(self.loading_text, style="dim"))
        self._load()


class SchemaDiffScreen(PairScreen):
    """Schema diff: the tools two runs offered, side by side, changes highlighted."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("c", "chains", "Compare chains")]
    loading_text = "diffing tool schemas…"

    def compute(self) -> Any:
        return self.backend.schema_diff(self.run_a, self.run_b)

    def render_result(self, result: Any) -> RenderableType:
        return render_schema_diff(result)

    def action_chains(self) -> None:
        self.workbench.open_compare(self.run_a, self.run_b)

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield ("Compare decision chains", "The same two runs, turn by turn", self.action_chains)


class ChainCompareScreen(PairScreen):
    """Compare: two decision chains aligned by turn, the first divergence marked."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("d", "schemas", "Schema diff")]
    loading_text = "aligning decision chains…"

    def compute(self) -> Any:
        return self.backend.chain_diff(self.run_a, self.run_b)

    def render_result(self, result: Any) -> RenderableType:
        return render_chain_diff(result)

    def action_schemas(self) -> None:
        self.workbench.open_schema_diff(self.run_a, self.run_b)

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield ("Schema diff", "Tool schemas of the same two runs", self.action_schemas)
