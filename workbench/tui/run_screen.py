"""Run screen: the decision-chain tree of one run beside the detail of the selected node."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Footer, Header, Input, Static, Tree

from traces.events import Event
from workbench.engine.views.search import RUN_PAGE, SEARCHED, RunMatches, SearchHit
from workbench.engine.views.timeline import run_tokens
from workbench.tui.backend import NotAvailable, Outline
from workbench.tui.chain_view import ChainNode, copy_value
from workbench.tui.line_input import LineInput
from workbench.tui.navigation import (
    OpenCompare,
    OpenFork,
    OpenReplay,
    OpenTimeline,
    open_session_of,
)
from workbench.tui.render import plural, short_id
from workbench.tui.screens import PaletteCommand, WorkbenchScreen
from workbench.tui.widgets.chain_tree import ChainTree, run_summary
from workbench.tui.widgets.run_detail import RunDetail

if TYPE_CHECKING:
    from workbench.engine.regress.suite import Case


class RunScreen(WorkbenchScreen):
    """Run: the decision chain (turns → model call → tool calls) and what each step saw."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "first_error", "First error"),
        Binding("r", "replay", "Replay"),
        Binding("v", "verify", "Verify replay"),
        Binding("f", "fork", "Fork turn"),
        Binding("a", "capture_case", "Add case"),
        Binding("c", "compare_parent", "Compare parent"),
        Binding("t", "timeline", "Timeline"),
        Binding("w", "why", "Why"),
        Binding("W", "session", "Session", show=False),
        Binding("slash", "search", "Search", key_display="/"),
        Binding("n", "next_match(1)", "Next match", show=False),
        Binding("N", "next_match(-1)", "Previous match", show=False),
        Binding("y", "copy_value", "Copy"),
        Binding("Y", "copy_run_id", "Copy run id", show=False),
        Binding("x", "export", "Export"),
        Binding("tab", "app.focus_next", "Switch pane", show=False),
    ]

    class Outlined(Message):
        def __init__(self, outline: Outline) -> None:
            super().__init__()
            self.outline = outline

    class FailureFound(Message):
        def __init__(self, event: Event | None) -> None:
            super().__init__()
            self.event = event

    class Searched(Message):
        def __init__(self, page: RunMatches, show: int) -> None:
            super().__init__()
            self.page = page
            self.show = show  # the match to go to

    class CaseCaptured(Message):
        def __init__(self, case: Case, suite: Path) -> None:
            super().__init__()
            self.case = case
            self.suite = suite

    class Exported(Message):
        def __init__(self, path: Path) -> None:
            super().__init__()
            self.path = path

    class ExportProgress(Message):
        def __init__(self, done: int, total: int) -> None:
            super().__init__()
            self.done = done
            self.total = total

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, type(self))  # only the latest figure is shown

    def __init__(
        self,
        run_id: str,
        *,
        jump_to_error: bool = False,
        step: tuple[int | None, int | None] | None = None,
    ) -> None:
        super().__init__()
        self.run_id = run_id
        self.jump_to_error = jump_to_error
        self.open_at = step  # (turn, seq) to select once the outline is in; seq None: the end
        self.outline: Outline | None = None
        # The page of search hits in this run that is held (a long run's matches are
        # read a page at a time), and the match shown, counted over the whole run.
        self.found: RunMatches | None = None
        self.match_index = -1
        self.exporting = False
        self._doing = ""  # what the title bar says is being done, while exporting
        self._export_noticed = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(
            Text(f"run {short_id(self.run_id)} · loading…"), classes="summary", id="run-summary"
        )
        with Horizontal():
            yield ChainTree(self.run_id, id="chain-tree")
            yield RunDetail(self.run_id, id="detail")
        search = Input(
            placeholder="search this run… (enter; n / N next and previous)", id="run-search"
        )
        search.display = False
        yield search
        yield Footer()

    @property
    def chain_tree(self) -> ChainTree:
        return self.query_one("#chain-tree", ChainTree)

    @property
    def detail(self) -> RunDetail:
        return self.query_one("#detail", RunDetail)

    def on_mount(self) -> None:
        self.chain_tree.focus()
        self._load_outline()

    # ------------------------------------------------------------------ outline

    @work(thread=True, exclusive=True, group="outline", exit_on_error=False)
    def _load_outline(self) -> None:
        self.post_message(self.Outlined(self.backend.outline(self.run_id)))

    def on_run_screen_outlined(self, message: Outlined) -> None:
        outline = self.outline = message.outline
        if outline.prices_problem:
            self.notify(outline.prices_problem, severity="warning", timeout=8)
        self.query_one("#run-summary", Static).update(run_summary(outline))
        self._show_sub_title()
        self.chain_tree.show_outline(outline)
        if self.jump_to_error:
            self.jump_to_error = False
            self.action_first_error()
        elif self.open_at is not None:
            (turn, seq), self.open_at = self.open_at, None
            self.chain_tree.jump(turn if seq is not None else None, seq or 0, "end")

    # ------------------------------------------------------------------ detail

    @on(Tree.NodeHighlighted, "#chain-tree")
    def _highlighted(self, event: Tree.NodeHighlighted[ChainNode]) -> None:
        data, tree = event.node.data, self.chain_tree
        if data is not None:
            self.detail.show_node(data, tree.turn_state(data.turn), tree.node_notes(data))

    def on_chain_tree_turn_filled(self, message: ChainTree.TurnFilled) -> None:
        tree = self.chain_tree
        data = message.node.data
        if tree.cursor_node is message.node and data is not None:
            self.detail.show_node(data, tree.turn_state(data.turn), tree.node_notes(data))

    # ------------------------------------------------------------------ actions

    def action_first_error(self) -> None:
        self._find_failure()

    @work(thread=True, exclusive=True, group="find", exit_on_error=False)
    def _find_failure(self) -> None:
        self.post_message(self.FailureFound(self.backend.first_failure(self.run_id)))

    def on_run_screen_failure_found(self, message: FailureFound) -> None:
        event = message.event
        if event is None:
            if self.outline is not None and self.outline.end is None:
                self.notify("No error recorded; the trace stops without a run_end.")
                self.chain_tree.select_top("end")
            else:
                self.notify("No errors in this run.")
            return
        self.chain_tree.jump(event.turn, event.seq, "end")

    def _selected(self) -> ChainNode | None:
        return self.chain_tree.selected()

    def action_replay(self) -> None:
        node = self._selected()
        self.post_message(OpenReplay(self.run_id, node.seq or 0 if node else 0))

    def action_verify(self) -> None:
        # The replay opens at the selected step and moves to the divergence once verified.
        node = self._selected()
        self.post_message(OpenReplay(self.run_id, node.seq or 0 if node else 0, verify=True))

    def action_fork(self) -> None:
        node = self._selected()
        if node is None or node.turn is None:
            self.notify("Select a turn (or a step inside one) to fork from.")
            return
        if node.kind == "tool" and node.events and self.outline is not None:
            # A tool's result is part of the next turn's history: mock it by forking there.
            call_id = getattr(node.events[0], "call_id", None)
            if node.turn < self.outline.last_turn:
                self.post_message(OpenFork(self.run_id, node.turn + 1, mock_call=call_id))
                return
        self.post_message(OpenFork(self.run_id, node.turn))

    def action_capture_case(self) -> None:
        """The selected turn as a regression case (`workbench capture-case`), in the suite
        the dialog names: the last one used, else the home's `suites/captured.wbsuite.toml`."""
        node = self._selected()
        if node is None or node.turn is None:
            self.notify("Select a turn (or a step inside one) to capture as a case.")
            return
        try:
            self.backend.check_may_write("capture a case")  # asked before the dialog opens
        except NotAvailable as exc:
            self.workbench.report_error(exc)
            return
        turn = node.turn
        suite = self.workbench.case_suite or self.backend.default_suite()

        def chosen(text: str | None) -> None:
            if text and text.strip():
                self.workbench.case_suite = Path(text.strip())
                self._capture(turn, Path(text.strip()))

        title = (
            f"capture turn {turn} of run {short_id(self.run_id)} as a case, expecting what the "
            "model chose there; the suite file (enter adds it, escape leaves):"
        )
        self.app.push_screen(LineInput(title, input_id="case-suite", value=_shown(suite)), chosen)

    @work(thread=True, exclusive=True, group="capture", exit_on_error=False)
    def _capture(self, turn: int, suite: Path) -> None:
        self.post_message(
            self.CaseCaptured(self.backend.capture_case(self.run_id, turn, suite), suite)
        )

    def on_run_screen_case_captured(self, message: CaseCaptured) -> None:
        case = message.case
        self.notify(
            f"Added case {case.id!r} to {_shown(message.suite)}: expect {case.expected_text()} "
            f"(`workbench test {_shown(message.suite)}` runs it)",
            timeout=8,
        )

    def action_compare_parent(self) -> None:
        row = self.outline.row if self.outline else None
        if row is None or not row.parent_run_id:
            self.notify("This run is not a fork; mark two runs on the runs screen to compare.")
            return
        self.post_message(OpenCompare(row.parent_run_id, self.run_id))

    # ------------------------------------------------------------------ search

    def action_back(self) -> None:
        box = self.query_one("#run-search", Input)
        # Escape closes an open search bar first, focused or not (after enter the tree has
        # the keys, the bar still shows): the run is left only once the bar is closed.
        if box.display:
            box.display = False
            self.query_one("#chain-tree").focus()
            return
        super().action_back()

    def action_search(self) -> None:
        box = self.query_one("#run-search", Input)
        box.display = True
        box.focus()

    @on(Input.Submitted, "#run-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        self.query_one("#chain-tree").focus()
        if not text:
            event.input.display = False
            self.found, self.match_index = None, -1
            return
        self._search(text, 0)

    @property
    def matches(self) -> list[SearchHit]:
        """The hits of the page held."""
        return self.found.hits if self.found is not None else []

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _search(self, text: str, show: int) -> None:
        # The page that holds match number `show`.
        page = self.backend.search_run(text, self.run_id, show - show % RUN_PAGE)
        self.post_message(self.Searched(page, show))

    def on_run_screen_searched(self, message: Searched) -> None:
        self.found = message.page
        if not message.page.total:
            self.notify(f"'{message.page.text}' is not in this run ({SEARCHED}).")
            return
        self._show_match(message.show % message.page.total)

    def action_next_match(self, step: int) -> None:
        if self.found is None or not self.found.total:
            self.notify("Search first with /.")
            return
        wanted = (self.match_index + step) % self.found.total
        if self.found.hit(wanted) is None:
            self._search(self.found.text, wanted)  # on another page: read it first
            return
        self._show_match(wanted)

    def _show_match(self, index: int) -> None:
        assert self.found is not None
        hit = self.found.hit(index)
        if hit is None:  # the run changed under the search: show what the page holds
            if not self.found.hits:
                return
            hit, index = self.found.hits[-1], self.found.offset + len(self.found.hits) - 1
        self.match_index = index
        self.notify(
            f"match {index + 1} of {self.found.total} · turn {hit.turn or '-'} · "
            f"{hit.where.replace('_', ' ')}: {hit.snippet}",
            timeout=4,
        )
        outside = "end" if hit.where in ("answer", "last_text") else "start"
        self.chain_tree.jump(hit.turn, hit.seq, outside)

    # ------------------------------------------------------------------ copy, export

    def action_copy_value(self) -> None:
        node = self._selected()
        value = copy_value(node) if node is not None else None
        if value is None:
            self.action_copy_run_id()
            return
        what, text = value
        self.workbench.copy(text, what)

    def action_copy_run_id(self) -> None:
        self.workbench.copy(self.run_id, f"run id {short_id(self.run_id)}")

    def action_export(self) -> None:
        if self.exporting:
            self.notify("The run is being exported; its progress is in the title bar.")
            return
        # A long run takes a while to write: the title bar says how far it is as it goes,
        # and a notice says it started, once the backend has taken it on.
        self.exporting = True
        self._export_noticed = False
        self._show_sub_title("exporting…")
        self._export()

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def _export(self) -> None:
        def progress(done: int, total: int) -> None:
            self.post_message(self.ExportProgress(done, total))

        self.post_message(self.Exported(self.backend.export(self.run_id, "md", progress)))

    def on_run_screen_export_progress(self, message: ExportProgress) -> None:
        if not self.exporting:
            return
        if not self._export_noticed:
            self._export_noticed = True
            self.notify(f"Exporting the run as Markdown ({plural(message.total, 'turn')})…")
        if message.total:
            share = message.done * 100 // message.total
            self._show_sub_title(
                f"exporting: turn {message.done:,} of {message.total:,} ({share}%)"
            )

    def on_run_screen_exported(self, message: Exported) -> None:
        self.exporting = False
        self._show_sub_title()
        self.notify(f"Exported the run as Markdown to {message.path}", timeout=8)

    def worker_failed(self, worker: Any) -> None:
        if worker.group == "export":
            self.exporting = False
            self._show_sub_title()

    def _show_sub_title(self, doing: str | None = None) -> None:
        """The run and its status in the title bar, and what is being done to it (an
        export's progress) while it is."""
        parts = [short_id(self.run_id)]
        if self.outline is not None:
            parts.append(self.outline.row.status)
        if self.exporting:
            self._doing = doing or self._doing
            parts.append(self._doing)
        self.sub_title = " · ".join(parts)

    def action_session(self) -> None:
        open_session_of(self, self.outline.row.session if self.outline else None)

    def action_timeline(self) -> None:
        # The outline's turn summaries hold the whole run's tokens: not counted again.
        summaries = self.outline.summaries if self.outline is not None else None
        tokens = run_tokens(summaries.values()) if summaries else None
        self.post_message(OpenTimeline(self.run_id, tokens))

    def action_why(self) -> None:
        from workbench.tui.why_screen import WhyScreen

        self.app.push_screen(WhyScreen(self.run_id))

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield ("Search this run", "Messages, tool calls, results, errors (/)", self.action_search)
        yield (
            "Timeline",
            "Model and tool calls as a waterfall, tokens per turn",
            self.action_timeline,
        )
        yield (
            "Copy the selected value",
            "Tool result, answer, error… to the clipboard",
            self.action_copy_value,
        )
        yield ("Copy the run id", "To the clipboard", self.action_copy_run_id)
        yield ("Export the run as Markdown", "A file to paste in an issue", self.action_export)
        yield ("Jump to the first error", "Select the first failing step", self.action_first_error)
        yield ("Replay from here", "Step through events from the selected node", self.action_replay)
        yield ("Verify replay", "Re-run offline and show the first divergence", self.action_verify)
        yield ("Fork this turn", "Edit the prompt, a tool or a result and re-run", self.action_fork)
        yield (
            "Add this turn as a case",
            "Append it to a regression suite, expecting the tool chosen (a)",
            self.action_capture_case,
        )
        yield ("Session", "The runs of this run's session, in order (w)", self.action_session)
        yield (
            "Compare with parent",
            "Decision chains of the fork and its parent",
            self.action_compare_parent,
        )


def _shown(path: Path) -> str:
    """A path as the user would type it: relative to the working folder when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
