"""Diff screens: two runs' tool schemas side by side, and their decision chains by turn.

Both diffs come from the engine (`workbench.engine.diff.alignment`); these screens only lay
them out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Header, Static

from traces.events import Edit
from workbench.engine.diff.alignment import CallStatus, ChainDiff, ChainTurn
from workbench.engine.diff.text_changes import Comparison, TextChange
from workbench.engine.recording.runs.window import TurnWindow
from workbench.tui.document import Document
from workbench.tui.footer import Footer
from workbench.tui.navigation import OpenCompare, OpenRun, OpenSchemaDiff
from workbench.tui.render import one_line, short_id, status_badge
from workbench.tui.schema_view import render_schema_diff
from workbench.tui.screens import PaletteCommand, WorkbenchScreen

# A call's mark, its style and what stands for a result it does not have, for every status
# a chain call can have (tests/tui/test_compare_statuses.py holds it to CALL_STATUSES).
CALL_MARKS: dict[CallStatus, tuple[str, str, str]] = {
    "ok": ("✔ ", "green", "ok"),
    "error": ("✖ ", "bold red", "error"),
    "missing": ("✖ ", "yellow", "no result"),
    "not_run": ("⊘ ", "bold yellow", "not run (refused or stopped by a limit)"),
}


VERDICT_WIDTH = len("first divergence")


def _turn_cell(turn: ChainTurn | None) -> Text:
    """One run's turn as text: each call with its arguments and result, or the answer."""
    if turn is None:
        return Text("—", style="dim")
    text = Text()
    if turn.text:
        text.append(one_line(turn.text, 160) + "\n", style="italic")
    if turn.outcome == "tools":
        for i, call in enumerate(turn.calls):
            if i:
                text.append("\n")
            mark, style, missing = CALL_MARKS[call.status]
            text.append(mark, style=style)
            text.append(call.name, style="bold")
            text.append(f"({_args(call.arguments)})", style="cyan")
            text.append(" → ", style="dim")
            text.append(one_line(call.result, 120) if call.result is not None else missing)
            if call.policy:  # a re-run: the tool's policy and what became of the call
                text.append(f" [{call.policy}]", style="magenta")
            elif call.mocked:
                text.append(" (mocked)", style="magenta")
        return text
    if turn.outcome == "answer":
        text.append(one_line(turn.answer, 240) or "(empty answer)", style="green")
        return text
    text.append(turn.outcome.replace("_", " "), style="bold red")
    return text


def _args(arguments: Any) -> str:
    import json

    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return one_line(text, 60)


def word_diff_text(spans: Sequence[tuple[str, str]]) -> Text:
    """A word diff as one text: removed words struck through in red, added ones green."""
    text = Text()
    for op, words in spans:
        if op != "equal" and text.plain and not text.plain[-1].isspace() and words[:1] != " ":
            text.append(" ")  # a replaced word stays apart from its replacement
        if op == "delete":
            text.append(words, style="red strike")
        elif op == "insert":
            text.append(words, style="bold green")
        else:
            text.append(words)
    return text


def edit_text(edit: Edit) -> Text:
    """One of the fork's edits, named by what it changed, its new value in full."""
    import json

    target = {
        "system": "system prompt",
        "user": "user message",
        "tool_description": f"description of tool {edit.target}",
        "tool_schema": f"parameter schema of tool {edit.target}",
        "mock_result": f"result of tool call {edit.target} (mocked)",
    }.get(edit.kind, edit.kind)
    value = edit.value if isinstance(edit.value, str) else json.dumps(edit.value, indent=2)
    return Text.assemble(("  • ", "magenta"), (target, "bold magenta"), (": ", "dim"), value)


def render_chain_diff(diff: ChainDiff) -> RenderableType:
    """A `ChainDiff`: one row per turn, A beside B, the first divergence marked."""
    table = Table(expand=True, header_style="bold", show_lines=True)
    table.add_column("turn", justify="right", no_wrap=True)  # with its mark: ▶ or ~
    table.add_column(f"A {short_id(diff.run_a)}", ratio=1)
    table.add_column(f"B {short_id(diff.run_b)}", ratio=1)
    # As wide as "first divergence", no wider: the runs' texts take the room (at 80
    # columns a verdict 22 wide left each run 19). Longer verdicts wrap at their commas.
    table.add_column("verdict", max_width=VERDICT_WIDTH)
    for row in diff.rows:
        if row.first_divergence:
            mark, verdict = ("▶ ", "bold red"), Text("first divergence\n", "bold red")
            verdict.append(", ".join(row.differences), style="red")
        elif row.same:
            mark, verdict = ("", ""), Text("same", style="green")
        else:
            mark, verdict = ("~ ", "yellow"), Text(", ".join(row.differences), style="yellow")
        style = "on #3a1010" if row.first_divergence else ""
        turn = Text.assemble(mark, str(row.turn))
        table.add_row(turn, _turn_cell(row.a), _turn_cell(row.b), verdict, style=style)
    table.add_row(Text("end"), status_badge(diff.status_a), status_badge(diff.status_b), Text(""))
    if diff.is_equal:
        summary = Text("The decision chains are the same.", style="bold green")
    elif diff.first_divergence is not None:
        summary = Text(f"First divergence at turn {diff.first_divergence}.", style="bold red")
    else:
        summary = Text("Same turn by turn, but the runs ended differently.", style="bold yellow")
    return Group(summary, Text(""), table, *(Text(n, style="dim") for n in diff.notes))


def render_comparison(comparison: Comparison) -> RenderableType:
    """A `workbench.engine.diff.text_changes.Comparison`: what the fork changed, the chains side
    by side, then every text that differs, A and B in full and their word diff."""
    parts: list[RenderableType] = []
    for fork in comparison.forks:
        where = f" at turn {fork.turn}" if fork.turn is not None else ""
        head = Text.assemble(
            (f"{fork.fork} ", "bold"),
            (short_id(fork.run_id), "bold"),
            (f" is a fork of {short_id(fork.parent_run_id)}{where}", ""),
            ("; it changed:" if fork.edits else ", with no edits", ""),
        )
        parts += [head, *(edit_text(edit) for edit in fork.edits), Text("")]
    parts.append(render_chain_diff(comparison.diff))
    if comparison.changes:
        parts += [Text(""), Text("What differs", style="bold")]
    for turn, changes in comparison.changes.items():
        for change in changes:
            parts.append(Text(f"\nturn {turn} · {change.what}", style="bold yellow"))
            parts.append(_sides(change))
    return Group(*parts)


def _sides(change: TextChange) -> Table:
    """A, B and their word diff, each label in its own column so every line of a
    multi-line text starts under the text's first line, not under the label."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for label, text, style in (("A", change.a, "cyan"), ("B", change.b, "magenta")):
        shown = Text("(absent)", style="dim") if text is None else Text(text)
        grid.add_row(Text(f"  {label}   ", style=f"bold {style}"), shown)
    if change.a is not None and change.b is not None:
        grid.add_row(Text("  diff", style="bold dim"), word_diff_text(change.spans))
    return grid


class PairScreen(WorkbenchScreen):
    """Shared shape: two runs, one engine call in a worker, one scrolling result."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "open_a", "Open A"),
        Binding("b", "open_b", "Open B"),
        Binding("s", "swap", "Swap A/B"),
    ]
    loading_text = "loading…"

    class Loaded(Message):
        def __init__(self, result: RenderableType) -> None:
            super().__init__()
            self.result = result

    def __init__(self, run_a: str, run_b: str) -> None:
        super().__init__()
        self.run_a = run_a
        self.run_b = run_b

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self._title(), classes="summary", id="pair-title")
        yield Document(Text(self.loading_text, style="dim"), id="pair-result")
        yield Footer()

    def _title(self) -> Text:
        return Text.assemble(
            ("A ", "bold cyan"),
            (short_id(self.run_a), "bold"),
            ("   vs   ", "dim"),
            ("B ", "bold magenta"),
            (short_id(self.run_b), "bold"),
        )

    @property
    def result(self) -> Document:
        return self.query_one("#pair-result", Document)

    def on_mount(self) -> None:
        self.result.focus()
        self._load()

    @work(thread=True, exclusive=True, group="pair", exit_on_error=False)
    def _load(self) -> None:
        # Computed and rendered here in the worker (rendering is a pure function of the result).
        self.post_message(self.Loaded(self.compute_rendered()))

    def compute_rendered(self) -> RenderableType:
        """The engine call for the two runs, rendered; runs in a thread worker."""
        raise NotImplementedError

    def on_pair_screen_loaded(self, message: Loaded) -> None:
        self.result.update(message.result)

    def worker_failed(self, worker: Any) -> None:
        self.result.update(Text("could not compute the diff", "red"))

    def action_open_a(self) -> None:
        self.post_message(OpenRun(self.run_a))

    def action_open_b(self) -> None:
        self.post_message(OpenRun(self.run_b))

    def action_swap(self) -> None:
        self.run_a, self.run_b = self.run_b, self.run_a
        self.query_one("#pair-title", Static).update(self._title())
        self.result.update(Text(self.loading_text, style="dim"))
        self._load()


class SchemaDiffScreen(PairScreen):
    """Schema diff: the tools two runs offered, side by side, changes highlighted."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("c", "chains", "Compare chains")]
    loading_text = "diffing tool schemas…"

    def compute_rendered(self) -> RenderableType:
        return render_schema_diff(self.backend.schema_diff(self.run_a, self.run_b))

    def action_chains(self) -> None:
        self.post_message(OpenCompare(self.run_a, self.run_b))

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield ("Compare decision chains", "The same two runs, turn by turn", self.action_chains)


class ChainCompareScreen(PairScreen):
    """Compare: two runs turn by turn, their differing texts word by word, the fork's edits;
    long runs a window of turns at a time."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "schemas", "Schema diff"),
        Binding("right_square_bracket", "window(1)", "Next turns", key_display="]"),
        Binding("left_square_bracket", "window(-1)", "Previous turns", key_display="["),
    ]
    loading_text = "aligning decision chains…"

    def __init__(self, run_a: str, run_b: str) -> None:
        super().__init__(run_a, run_b)
        self.start = 0  # the position of the first turn compared among either run's turns
        self.window: TurnWindow | None = None  # the turns the result shows

    def compute_rendered(self) -> RenderableType:
        comparison, window = self.backend.comparison(self.run_a, self.run_b, self.start)
        self.window = window
        shown = render_comparison(comparison)
        if window.whole or window.shown is None:
            return shown
        first, last = window.shown
        keys = [
            text
            for text, step in (("] next", 1), ("[ previous", -1))
            if window.moved(step) is not None
        ]
        note = Text(
            f"turns {first:,}-{last:,} of {len(window.turn_numbers):,} compared (what follows "
            "is of these turns)" + (f"  ({', '.join(keys)} {window.size})" if keys else ""),
            style="yellow",
        )
        return Group(note, Text(""), shown)

    def action_window(self, step: int) -> None:
        """The next (`step` 1) or previous (-1) window of the runs' turns."""
        if self.window is None or self.window.whole:
            self.notify("Every turn of these runs is compared.")
            return
        start = self.window.moved(step)
        if start is None:
            self.notify("No later turns." if step > 0 else "No earlier turns.")
            return
        self.start = start
        self.result.update(Text(self.loading_text, style="dim"))
        self._load()

    def action_schemas(self) -> None:
        self.post_message(OpenSchemaDiff(self.run_a, self.run_b))

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield ("Schema diff", "Tool schemas of the same two runs", self.action_schemas)
