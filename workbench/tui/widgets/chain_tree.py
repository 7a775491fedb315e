"""The run screen's chain tree and header line: the tree fills from a run's outline and
loads each turn's steps when it is opened; its labels end at a word within the pane, and
the summary line says what the run was and how it ended."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from workbench.tui.backend import Outline
from workbench.tui.chain_view import (
    SKELETON_TYPES,
    TURNS_PER_GROUP,
    ChainNode,
    end_node,
    find_node,
    start_node,
    turn_children,
    turn_groups,
    turn_label,
    turn_node,
)
from workbench.tui.marks import marked, notes_on
from workbench.tui.render import fmt_count, fmt_ms, one_line, plural, short_id, status_badge
from workbench.tui.screens import WorkbenchWidget

TurnState = Literal["folded", "loading", "loaded"]


def run_summary(outline: Outline) -> Text:
    row = outline.row
    parent = (
        f"  fork of {short_id(row.parent_run_id)} at turn {row.fork_turn}"
        if row.parent_run_id
        else ""
    )
    head = Text.assemble(("run ", "dim"), (short_id(row.run_id), "bold"))
    return Text.assemble(
        marked(head, notes_on(outline.notes, None)),  # what the run itself is marked with
        "  ",
        status_badge(row.status),
        ("  " + one_line(row.task, 70), ""),
        (f"\n{row.model}  ·  {plural(outline.turns, 'turn')}  ·  ", "dim"),
        (plural(row.tool_calls, "tool call"), "dim"),
        (f" ({row.tool_errors} failed)" if row.tool_errors else "", "red"),
        (f"  ·  {fmt_count(row.total_tokens)} tokens", "dim"),
        (f" ({outline.cost})" if outline.cost else "", "dim"),
        (f"  ·  {fmt_ms(row.duration_ms)}", "dim"),
        (f"  ·  {plural(outline.events, 'event')}{parent}", "dim"),
    )


class ChainTree(Tree[ChainNode], WorkbenchWidget):
    """The decision chain of one run: its start, its turns (in groups when there are many;
    each turn's model call and tool calls loaded when it is opened) and its end; a turn or a
    tool call that is annotated shows its marks (`workbench.tui.marks`). A label
    longer than the pane ends at a word with an ellipsis (the detail pane has the whole
    text), never cut mid-word by the pane's edge."""

    class TurnLoaded(Message):
        def __init__(self, turn: int, children: list[ChainNode], focus_seq: int | None) -> None:
            super().__init__()
            self.turn = turn
            self.children = children
            self.focus_seq = focus_seq

    class TurnFilled(Message):
        """A turn's steps are in the tree (its node's detail can say more now)."""

        def __init__(self, node: TreeNode[ChainNode]) -> None:
            super().__init__()
            self.node = node

    def __init__(self, run_id: str, *, id: str | None = None) -> None:
        super().__init__("decision chain", id=id)
        self.run_id = run_id
        self.show_root = False
        self.auto_expand = True
        self.outline: Outline | None = None
        self.turns: dict[int, TreeNode[ChainNode]] = {}
        self.turns_loading: set[int] = set()
        self.turns_loaded: set[int] = set()

    def render_label(self, node: TreeNode[ChainNode], base_style: Style, style: Style) -> Text:
        text = super().render_label(node, base_style, style)
        levels = sum(1 for _ in ancestors(node)) - (0 if self.show_root else 1)
        room = self.scrollable_content_region.width - levels * self.guide_depth - 1
        if room <= 12 or text.cell_len <= room:
            return text
        space = text.plain.rfind(" ", 0, room - 1)
        end = space if space >= room * 2 // 3 else room - 1
        return Text.assemble(text[:end], "…")

    def show_outline(self, outline: Outline) -> None:
        """The run's start, its turns (folded) and its end."""
        self.outline = outline
        root = self.root
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
        self.call_after_refresh(self.move_cursor_to_line, 0)

    def turn_state(self, turn: int | None) -> TurnState:
        if turn in self.turns_loading:
            return "loading"
        return "loaded" if turn in self.turns_loaded else "folded"

    def selected(self) -> ChainNode | None:
        node = self.cursor_node
        return node.data if node is not None else None

    # ------------------------------------------------------------------ turns

    def _add_turns(self, parent: TreeNode[ChainNode], first: int, last: int) -> None:
        summaries = self.outline.summaries if self.outline is not None else {}
        for number in range(first, last + 1):
            node = turn_node(number, summaries.get(number))
            node.label = marked(node.label, self._notes(number))
            self.turns[number] = parent.add(node.label, data=node, allow_expand=True)

    def turn_node(self, turn: int) -> TreeNode[ChainNode] | None:
        """The turn's node, creating its group's turn nodes first if it is still folded."""
        if turn not in self.turns:
            for group in self.root.children:
                data = group.data
                if data is None or data.kind != "turns" or group.children:
                    continue
                if (data.turn or 0) <= turn <= (data.last_turn or 0):
                    self._add_turns(group, data.turn or 0, data.last_turn or 0)
                    group.expand()
        return self.turns.get(turn)

    @on(Tree.NodeExpanded)
    def _expanded(self, event: Tree.NodeExpanded[ChainNode]) -> None:
        data = event.node.data
        if data is None or event.node.children:
            return
        if data.kind == "turns":
            self._add_turns(event.node, data.turn or 0, data.last_turn or 0)
        elif data.kind == "turn" and data.turn not in self.turns_loaded:
            self._request_turn(data.turn or 0)

    def _request_turn(self, turn: int, focus_seq: int | None = None) -> None:
        if turn in self.turns_loading and focus_seq is None:
            return
        self.turns_loading.add(turn)
        self._load_turn(turn, focus_seq)

    @work(thread=True, group="turns", exit_on_error=False)
    def _load_turn(self, turn: int, focus_seq: int | None) -> None:
        events = self.backend.turn_events(self.run_id, turn, SKELETON_TYPES)
        outline = self.outline
        start = outline.start if outline is not None else None  # names each tool's policy
        cost = outline.cost_of if outline is not None else None
        self.post_message(self.TurnLoaded(turn, turn_children(events, start, cost), focus_seq))

    def on_chain_tree_turn_loaded(self, message: TurnLoaded) -> None:
        message.stop()
        self.turns_loading.discard(message.turn)
        parent = self.turn_node(message.turn)
        if parent is None:
            return
        if message.turn not in self.turns_loaded:
            self.turns_loaded.add(message.turn)
            self._fill(parent, message.children)
            assert parent.data is not None
            parent.data.children = message.children
            parent.data.failed = any(n.failed for n in message.children)
            summary = self.outline.summaries.get(message.turn) if self.outline else None
            label = turn_label(message.turn, message.children, summary)
            parent.set_label(marked(label, self._notes(message.turn)))
            self.post_message(self.TurnFilled(parent))
        parent.expand()
        if message.focus_seq is not None:
            self._select_seq(parent, message.focus_seq)

    def _notes(self, turn: int | None, call_id: str | None = None) -> list[dict[str, Any]]:
        return notes_on(self.outline.notes, turn, call_id) if self.outline is not None else []

    def node_notes(self, node: ChainNode) -> list[dict[str, Any]]:
        """The annotations on what `node` shows: the run (its start and end), a turn, or
        a tool call."""
        if node.kind in ("start", "end"):
            return self._notes(None)
        if node.kind == "turn":
            return self._notes(node.turn)
        if node.kind == "tool" and node.events:
            return self._notes(node.turn, getattr(node.events[0], "call_id", None))
        return []

    def _fill(self, parent: TreeNode[ChainNode], children: list[ChainNode]) -> None:
        for child in children:
            if child.kind == "tool":
                child.label = marked(child.label, self.node_notes(child))
            if child.children:
                branch = parent.add(child.label, data=child, expand=child.failed)
                self._fill(branch, child.children)
            else:
                parent.add_leaf(child.label, data=child)

    # ------------------------------------------------------------------ moving

    def jump(self, turn: int | None, seq: int, outside: str) -> None:
        """Select the node showing event `seq`, loading its turn first if need be; an event
        outside the turns selects the top node of kind `outside` (start or end)."""
        if turn is None:
            self.select_top(outside)
            return
        parent = self.turn_node(turn)
        if parent is None:
            return
        if turn in self.turns_loaded:
            parent.expand()
            self._select_seq(parent, seq)
        else:
            self._request_turn(turn, focus_seq=seq)

    def select_top(self, kind: str) -> None:
        for node in self.root.children:
            if node.data is not None and node.data.kind == kind:
                self.call_after_refresh(self._move_to, node)

    def _select_seq(self, parent: TreeNode[ChainNode], seq: int) -> None:
        assert parent.data is not None
        target = find_node(parent.data.children, seq)
        for node in walk_tree(parent):
            if node.data is target:
                for ancestor in ancestors(node):
                    ancestor.expand()
                self.call_after_refresh(self._move_to, node)
                return

    def _move_to(self, node: TreeNode[ChainNode]) -> None:
        self.move_cursor(node)
        self.scroll_to_node(node, animate=False)
        self.focus()


def walk_tree(node: TreeNode[Any]) -> Iterator[TreeNode[Any]]:
    for child in node.children:
        yield child
        yield from walk_tree(child)


def ancestors(node: TreeNode[Any]) -> Iterator[TreeNode[Any]]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent
