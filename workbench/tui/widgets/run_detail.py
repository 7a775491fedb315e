"""The run screen's detail pane: what the selected step of the chain sent and received.
What the tree node holds shows at once; a request, a stream's chunks or a tool call's MCP
frames are read from the store in a worker first."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from traces.events import McpMessage, ModelChunk
from workbench.tui.chain_view import ChainNode, not_run_detail, turn_label
from workbench.tui.marks import Note, marks_detail
from workbench.tui.render import event_summary, render_chunks, render_event, render_tool_schema
from workbench.tui.screens import WorkbenchWidget
from workbench.tui.widgets.chain_tree import TurnState

CHUNKS_SHOWN = 400  # the rest are a keypress away in the replay stepper


class RunDetail(VerticalScroll, WorkbenchWidget):
    """The detail of one chain node, scrolled to its top each time it changes."""

    class Ready(Message):
        def __init__(self, renderable: RenderableType) -> None:
            super().__init__()
            self.renderable = renderable

        def can_replace(self, message: Message) -> bool:
            # Moving through the tree renders a detail per step; only the last is shown.
            return isinstance(message, type(self))

    def __init__(self, run_id: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run_id = run_id

    def compose(self) -> ComposeResult:
        yield Static(
            Text("Select a step to see what it sent and received.", style="dim"),
            id="detail-body",
        )

    def show_node(self, node: ChainNode, turn_state: TurnState, notes: Sequence[Note] = ()) -> None:
        """`node`'s detail, then the annotations on it (`notes`); `turn_state` says
        whether a turn node's steps are loaded."""
        if node.kind in {"request", "chunks", "model_call"} or (
            node.kind == "tool" and node.seq_end
        ):
            self.show(Text("loading…", style="dim"))
            self._load(node, notes)
            return
        try:
            shown = local_detail(node, turn_state)
            self.show(Group(shown, marks_detail(notes)) if notes else shown)
        except Exception as exc:  # a damaged event must not take the screen down
            self.workbench.report_error(exc)

    def show(self, renderable: RenderableType) -> None:
        self.query_one("#detail-body", Static).update(renderable)
        self.scroll_home(animate=False)

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def _load(self, node: ChainNode, notes: Sequence[Note]) -> None:
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
        if notes:
            renderable = Group(renderable, marks_detail(notes))
        self.post_message(self.Ready(renderable))

    def on_run_detail_ready(self, message: Ready) -> None:
        message.stop()
        self.show(message.renderable)


def local_detail(node: ChainNode, turn_state: TurnState) -> RenderableType:
    """The detail of a node from what the tree already holds."""
    if node.kind == "turns":
        return Text(f"turns {node.turn} to {node.last_turn}: press enter to list them", style="dim")
    if node.kind == "turn":
        if turn_state == "loading":
            return Text(f"turn {node.turn}: loading…", style="dim")
        if turn_state == "folded":
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
        return Text("The trace has no run_end: the run was killed or is still going.", style="cyan")
    return Group(*(render_event(e) for e in node.events)) if node.events else Text("")
