"""Run screen: the decision-chain tree of one run beside the detail of the selected node."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Header, Input, Static, Tree
from textual.widgets.tree import TreeNode

from traces.events import (
    Event,
    McpMessage,
    ModelChunk,
)
from workbench.engine.views.search import SEARCHED, SearchHit
from workbench.engine.views.timeline import run_tokens
from workbench.tui.backend import Outline
from workbench.tui.chain_tree import ChainTree, ancestors, run_summary, walk_tree
from workbench.tui.chain_view import (
    SKELETON_TYPES,
    TURNS_PER_GROUP,
    ChainNode,
    copy_value,
    end_node,
    find_node,
    not_run_detail,
    start_node,
    turn_children,
    turn_groups,
    turn_label,
    turn_node,
)
from workbench.tui.navigation import OpenCompare, OpenFork, OpenReplay, OpenTimeline
from workbench.tui.render import (
    event_summary,
    plural,
    render_chunks,
    render_event,
    render_tool_schema,
    short_id,
)
from workbench.tui.screens import PaletteCommand, WorkbenchScreen

CHUNKS_SHOWN = 400  # the rest are a keypress away in the replay stepper


class RunScreen(WorkbenchScreen):
    """Run: the decision chain (turns → model call → tool calls) and what each step saw."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "first_error", "First error"),
        Binding("r", "replay", "Replay"),
        Binding("v", "verify", "Verify replay"),
        Binding("f", "fork", "Fork turn"),
        Binding("c", "compare_parent", "Compare parent"),
        Binding("t", "timeline", "Timeline"),
        Binding("w", "why", "Why"),
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

    class TurnLoaded(Message):
        def __init__(self, turn: int, children: list[ChainNode], focus_seq: int | None) -> None:
            super().__init__()
            self.turn = turn
            self.children = children
            self.focus_seq = focus_seq

    class DetailReady(Message):
        def __init__(self, renderable: RenderableType) -> None:
            super().__init__()
            self.renderable = renderable

        def can_replace(self, message: Message) -> bool:
            # Moving through the tree renders a detail per step; only the last is shown.
            return isinstance(message, type(self))

    class FailureFound(Message):
        def __init__(self, event: Event | None) -> None:
            super().__init__()
            self.event = event

    class Searched(Message):
        def __init__(self, text: str, hits: list[SearchHit]) -> None:
            super().__init__()
            self.text = text
            self.hits = hits

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
        self._turns: dict[int, TreeNode[ChainNode]] = {}
        self._loading: set[int] = set()
        self._loaded: set[int] = set()
        self.matches: list[SearchHit] = []  # search hits in this run
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
            tree = ChainTree("decision chain", id="chain-tree")
            tree.show_root = False
            tree.auto_expand = True
            yield tree
            with VerticalScroll(id="detail"):
                yield Static(
                    Text("Select a step to see what it sent and received.", style="dim"),
                    id="detail-body",
                )
        search = Input(
            placeholder="search this run… (enter; n / N next and previous)", id="run-search"
        )
        search.display = False
        yield search
        yield Footer()

    @property
    def chain_tree(self) -> Tree[ChainNode]:
        return self.query_one("#chain-tree", Tree)

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
        root = self.chain_tree.root
        root.remove_children()
        if outline.start is not None:
            start = start_node(outline.start)  # type: ignore[arg-type]
            if start.children:  # the tools it offered, each expandable to its description
                self._fill(root.add(start.label, data=start), start.children)
            else:
                root.add_leaf(start.label, data=start)
        if outline.turns > TURNS_PER_GROUP:
            for group in turn_groups(outline.first_turn, outline.last_turn):
                root.add(group.label, data=group, allow_expand=True)
        else:
            self._add_turns(root, outline.first_turn, outline.last_turn)
        end = end_node(outline.end, outline.row.status)  # type: ignore[arg-type]
        root.add_leaf(end.label, data=end)
        root.expand()
        self.chain_tree.call_after_refresh(self.chain_tree.move_cursor_to_line, 0)
        if self.jump_to_error:
            self.jump_to_error = False
            self.action_first_error()
        elif self.open_at is not None:
            (turn, seq), self.open_at = self.open_at, None
            self._jump(turn if seq is not None else None, seq or 0, "end")

    # ------------------------------------------------------------------ turns

    def _add_turns(self, parent: TreeNode[ChainNode], first: int, last: int) -> None:
        summaries = self.outline.summaries if self.outline is not None else {}
        for number in range(first, last + 1):
            node = turn_node(number, summaries.get(number))
            self._turns[number] = parent.add(node.label, data=node, allow_expand=True)

    def _turn_tree_node(self, turn: int) -> TreeNode[ChainNode] | None:
        """The turn's node, creating its group's turn nodes first if it is still folded."""
        if turn not in self._turns:
            for group in self.chain_tree.root.children:
                data = group.data
                if data is None or data.kind != "turns" or group.children:
                    continue
                if (data.turn or 0) <= turn <= (data.last_turn or 0):
                    self._add_turns(group, data.turn or 0, data.last_turn or 0)
                    group.expand()
        return self._turns.get(turn)

    @on(Tree.NodeExpanded, "#chain-tree")
    def _expanded(self, event: Tree.NodeExpanded[ChainNode]) -> None:
        data = event.node.data
        if data is None or event.node.children:
            return
        if data.kind == "turns":
            self._add_turns(event.node, data.turn or 0, data.last_turn or 0)
        elif data.kind == "turn" and data.turn not in self._loaded:
            self._request_turn(data.turn or 0)

    def _request_turn(self, turn: int, focus_seq: int | None = None) -> None:
        if turn in self._loading and focus_seq is None:
            return
        self._loading.add(turn)
        self._load_turn(turn, focus_seq)

    @work(thread=True, group="turns", exit_on_error=False)
    def _load_turn(self, turn: int, focus_seq: int | None) -> None:
        events = self.backend.turn_events(self.run_id, turn, SKELETON_TYPES)
        outline = self.outline
        start = outline.start if outline is not None else None  # names each tool's policy
        cost = outline.cost_of if outline is not None else None
        self.post_message(self.TurnLoaded(turn, turn_children(events, start, cost), focus_seq))

    def on_run_screen_turn_loaded(self, message: TurnLoaded) -> None:
        self._loading.discard(message.turn)
        parent = self._turn_tree_node(message.turn)
        if parent is None:
            return
        if message.turn not in self._loaded:
            self._loaded.add(message.turn)
            self._fill(parent, message.children)
            assert parent.data is not None
            parent.data.children = message.children
            parent.data.failed = any(n.failed for n in message.children)
            summary = self.outline.summaries.get(message.turn) if self.outline else None
            parent.set_label(turn_label(message.turn, message.children, summary))
            if self.chain_tree.cursor_node is parent:
                self._show(self._local_detail(parent.data))
        parent.expand()
        if message.focus_seq is not None:
            self._select_seq(parent, message.focus_seq)

    def _fill(self, parent: TreeNode[ChainNode], children: list[ChainNode]) -> None:
        for child in children:
            if child.children:
                branch = parent.add(child.label, data=child, expand=child.failed)
                self._fill(branch, child.children)
            else:
                parent.add_leaf(child.label, data=child)

    def _select_seq(self, parent: TreeNode[ChainNode], seq: int) -> None:
        assert parent.data is not None
        target = find_node(parent.data.children, seq)
        for node in walk_tree(parent):
            if node.data is target:
                for ancestor in ancestors(node):
                    ancestor.expand()
                self.chain_tree.call_after_refresh(self._move_to, node)
                return

    def _move_to(self, node: TreeNode[ChainNode]) -> None:
        self.chain_tree.move_cursor(node)
        self.chain_tree.scroll_to_node(node, animate=False)
        self.chain_tree.focus()

    # ------------------------------------------------------------------ detail

    @on(Tree.NodeHighlighted, "#chain-tree")
    def _highlighted(self, event: Tree.NodeHighlighted[ChainNode]) -> None:
        data = event.node.data
        if data is None:
            return
        if data.kind in {"request", "chunks", "model_call"} or (
            data.kind == "tool" and data.seq_end
        ):
            self._show(Text("loading…", style="dim"))
            self._load_detail(data)
        else:
            try:
                self._show(self._local_detail(data))
            except Exception as exc:  # a damaged event must not take the screen down
                self.workbench.report_error(exc)

    def _local_detail(self, node: ChainNode) -> RenderableType:
        if node.kind == "turns":
            return Text(
                f"turns {node.turn} to {node.last_turn}: press enter to list them", style="dim"
            )
        if node.kind == "turn":
            if node.turn in self._loading:
                return Text(f"turn {node.turn}: loading…", style="dim")
            if node.turn not in self._loaded:
                return Text(f"turn {node.turn}: press enter to open", style="dim")
            return Group(
                turn_label(node.turn or 0, node.children),
                *(not_run_detail(c) for c in node.children if c.kind == "not_run"),
                *(Text("  " + event_summary(e)) for c in node.children for e in c.events),
            )
        if node.kind == "not_run":
            return not_run_detail(node)
        if node.kind == "tool_def" and node.schema is not None:
            return render_tool_schema(node.schema, node.source)
        if node.kind == "end" and not node.events:
            return Text(
                "The trace has no run_end: the run was killed or is still going.", style="cyan"
            )
        return Group(*(render_event(e) for e in node.events)) if node.events else Text("")

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def _load_detail(self, node: ChainNode) -> None:
        backend = self.backend
        renderable: RenderableType
        if node.kind == "chunks":
            assert node.seq is not None
            count = min(node.count, CHUNKS_SHOWN)
            chunks = [
                e
                for e in backend.events(self.run_id, node.seq, count + 4)
                if isinstance(e, ModelChunk)
            ]
            renderable = render_chunks(chunks[:count], node.count)
        elif node.kind == "tool":
            assert node.seq is not None and node.seq_end is not None
            span = backend.events(self.run_id, node.seq, node.seq_end - node.seq + 1)
            frames = [e for e in span if isinstance(e, McpMessage)]
            renderable = Group(
                *(render_event(e) for e in node.events),
                *([Text(f"\nMCP frames ({len(frames)})", style="bold dim")] if frames else []),
                *(render_event(e) for e in frames),
            )
        else:
            assert node.seq is not None
            request = (
                node.children[0].seq if node.kind == "model_call" and node.children else node.seq
            )
            event = backend.event(self.run_id, request or 0)
            shown = [event] if event is not None else []
            if node.kind == "model_call":
                shown = [*node.events, *shown]
            renderable = Group(*(render_event(e) for e in shown))
        self.post_message(self.DetailReady(renderable))

    def on_run_screen_detail_ready(self, message: DetailReady) -> None:
        self._show(message.renderable)

    def _show(self, renderable: RenderableType) -> None:
        self.query_one("#detail-body", Static).update(renderable)
        self.query_one("#detail", VerticalScroll).scroll_home(animate=False)

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
                self._select_top("end")
            else:
                self.notify("No errors in this run.")
            return
        self._jump(event.turn, event.seq, "end")

    def _jump(self, turn: int | None, seq: int, outside: str) -> None:
        """Select the node showing event `seq`, loading its turn first if need be."""
        if turn is None:
            self._select_top(outside)
            return
        parent = self._turn_tree_node(turn)
        if parent is None:
            return
        if turn in self._loaded:
            parent.expand()
            self._select_seq(parent, seq)
        else:
            self._request_turn(turn, focus_seq=seq)

    def _select_top(self, kind: str) -> None:
        for node in self.chain_tree.root.children:
            if node.data is not None and node.data.kind == kind:
                self.chain_tree.call_after_refresh(self._move_to, node)

    def _selected(self) -> ChainNode | None:
        node = self.chain_tree.cursor_node
        return node.data if node is not None else None

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
            self.matches, self.match_index = [], -1
            return
        self._search(text)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _search(self, text: str) -> None:
        self.post_message(self.Searched(text, self.backend.search(text, run_id=self.run_id)))

    def on_run_screen_searched(self, message: Searched) -> None:
        self.matches, self.match_index = message.hits, -1
        if not message.hits:
            self.notify(f"'{message.text}' is not in this run ({SEARCHED}).")
            return
        self.action_next_match(1)

    def action_next_match(self, step: int) -> None:
        if not self.matches:
            self.notify("Search first with /.")
            return
        self.match_index = (self.match_index + step) % len(self.matches)
        hit = self.matches[self.match_index]
        self.notify(
            f"match {self.match_index + 1} of {len(self.matches)} · turn {hit.turn or '-'} · "
            f"{hit.where.replace('_', ' ')}: {hit.snippet}",
            timeout=4,
        )
        self._jump(hit.turn, hit.seq, "end" if hit.where in ("answer", "last_text") else "start")

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
            "Compare with parent",
            "Decision chains of the fork and its parent",
            self.action_compare_parent,
        )
