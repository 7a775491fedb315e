"""The run screen's chain tree and header line: the tree's labels end at a word within the
pane, and the summary line says what the run was and how it ended."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from workbench.tui.backend import Outline
from workbench.tui.chain_view import ChainNode
from workbench.tui.render import fmt_count, fmt_ms, one_line, plural, short_id, status_badge


def run_summary(outline: Outline) -> Text:
    row = outline.row
    parent = (
        f"  fork of {short_id(row.parent_run_id)} at turn {row.fork_turn}"
        if row.parent_run_id
        else ""
    )
    return Text.assemble(
        ("run ", "dim"),
        (short_id(row.run_id), "bold"),
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


class ChainTree(Tree[ChainNode]):
    """The decision chain. A label longer than the pane ends at a word with an ellipsis (the
    detail pane has the whole text), never cut mid-word by the pane's edge."""

    def render_label(self, node: TreeNode[ChainNode], base_style: Style, style: Style) -> Text:
        text = super().render_label(node, base_style, style)
        levels = sum(1 for _ in ancestors(node)) - (0 if self.show_root else 1)
        room = self.scrollable_content_region.width - levels * self.guide_depth - 1
        if room <= 12 or text.cell_len <= room:
            return text
        space = text.plain.rfind(" ", 0, room - 1)
        end = space if space >= room * 2 // 3 else room - 1
        return Text.assemble(text[:end], "…")


def walk_tree(node: TreeNode[Any]) -> Iterator[TreeNode[Any]]:
    for child in node.children:
        yield child
        yield from walk_tree(child)


def ancestors(node: TreeNode[Any]) -> Iterator[TreeNode[Any]]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent
