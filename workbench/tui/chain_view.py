"""The decision chain as tree nodes: pure functions from a turn's events to labelled nodes.

A turn is loaded only when its node is expanded, and without its raw chunks or MCP frames
(those are fetched by seq range when their node is selected), so a run of any length costs
one small query per opened turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from rich.text import Text

from traces.events import (
    Error,
    Event,
    HistoryTrimmed,
    ModelRequest,
    ModelResponse,
    RunEnd,
    RunStart,
    ToolEnd,
    ToolStart,
)
from workbench.tui.render import (
    FAIL_ICON,
    OK_ICON,
    STATUS_ICONS,
    STATUS_STYLES,
    fmt_ms,
    one_line,
    plural,
)

# What a turn's node loads: everything but the bulky per-chunk and per-frame events.
SKELETON_TYPES: list[str] = [
    "run_start",
    "model_request",
    "model_response",
    "tool_start",
    "tool_end",
    "error",
    "history_trimmed",
    "run_end",
]

NodeKind = Literal[
    "start",
    "turns",
    "turn",
    "model_call",
    "request",
    "response",
    "chunks",
    "tool",
    "error",
    "trim",
    "end",
]


@dataclass
class ChainNode:
    kind: NodeKind
    label: Text
    turn: int | None = None
    seq: int | None = None  # the event the detail pane shows
    seq_end: int | None = None  # last seq covered (tool end, last chunk)
    count: int = 0  # chunks in a chunks node
    last_turn: int | None = None  # a group of turns covers turn..last_turn
    failed: bool = False
    events: list[Event] = field(default_factory=list)  # already-loaded events to show
    children: list[ChainNode] = field(default_factory=list)

    def seqs(self) -> set[int]:
        found = {e.seq for e in self.events}
        if self.seq is not None:
            found.add(self.seq)
        return found


def _icon(ok: bool) -> tuple[str, str]:
    return (OK_ICON, "green") if ok else (FAIL_ICON, "bold red")


def start_node(event: RunStart) -> ChainNode:
    label = Text.assemble(("● ", "cyan"), ("start ", "bold"), (one_line(event.task, 60), ""))
    return ChainNode("start", label, seq=event.seq, events=[event])


def end_node(event: RunEnd | None, status: str) -> ChainNode:
    style = STATUS_STYLES.get(status, "")
    icon = STATUS_ICONS.get(status, "?")
    if event is None:
        label = Text.assemble((f"{icon} ", style), ("no run_end: incomplete", style))
        return ChainNode("end", label, failed=True)
    label = Text.assemble(
        (f"{icon} ", style),
        (f"end: {event.status}", f"bold {style}"),
        ("  " + one_line(event.reason, 60), "dim"),
    )
    return ChainNode(
        "end", label, seq=event.seq, events=[event], failed=event.status != "completed"
    )


TURNS_PER_GROUP = 100  # a run with more turns shows them in groups, so the tree stays small


def turn_groups(turns: int) -> list[ChainNode]:
    """Top-level groups of turns for long runs: "turns 1–100", "turns 101–200", …"""
    groups = []
    for first in range(1, turns + 1, TURNS_PER_GROUP):
        last = min(first + TURNS_PER_GROUP - 1, turns)
        label = Text.assemble(("turns ", "bold"), (f"{first}–{last}", "bold"))
        groups.append(ChainNode("turns", label, turn=first, last_turn=last))
    return groups


def turn_node(turn: int, failed: bool | None = None) -> ChainNode:
    """A collapsed turn; its children come from `turn_children` once expanded."""
    label = Text.assemble(("turn ", "bold"), (str(turn), "bold"))
    return ChainNode("turn", label, turn=turn, failed=bool(failed))


def turn_children(events: list[Event]) -> list[ChainNode]:
    """Group one turn's skeleton events (see SKELETON_TYPES) into model calls and tools."""
    nodes: list[ChainNode] = []
    call: ChainNode | None = None
    request: ModelRequest | None = None
    tools: dict[str, ChainNode] = {}
    for event in events:
        match event:
            case ModelRequest():
                request = event
                label = Text.assemble(
                    ("◇ ", "blue"), ("model call", "bold"), (f" · attempt {event.attempt}", "dim")
                )
                call = ChainNode("model_call", label, turn=event.turn, seq=event.seq)
                call.children.append(
                    ChainNode(
                        "request",
                        Text(f"request · {len(event.messages)} messages, {len(event.tools)} tools"),
                        turn=event.turn,
                        seq=event.seq,
                    )
                )
                nodes.append(call)
            case ModelResponse():
                if call is None:  # a response without its request (damaged trace)
                    call = ChainNode(
                        "model_call", Text("◇ model call", style="bold"), turn=event.turn
                    )
                    nodes.append(call)
                _close_call(call, request, event)
                call, request = None, None
            case ToolStart():
                failed = event.parse_error is not None
                icon, style = _icon(not failed) if failed else ("…", "yellow")
                label = Text.assemble(
                    (f"{icon} ", style),
                    (event.name, "bold"),
                    (f"({one_line(event.arguments_raw, 40)})", "cyan"),
                )
                node = ChainNode(
                    "tool", label, turn=event.turn, seq=event.seq, failed=failed, events=[event]
                )
                tools[event.call_id] = node
                nodes.append(node)
            case ToolEnd():
                node = tools.get(event.call_id) or ChainNode(
                    "tool", Text(event.name), turn=event.turn
                )
                node.events.append(event)
                node.seq_end = event.seq
                node.failed = node.failed or not event.ok
                icon, style = _icon(event.ok)
                start = node.events[0]
                args = start.arguments_raw if isinstance(start, ToolStart) else ""
                node.label = Text.assemble(
                    (f"{icon} ", style),
                    (event.name, "bold"),
                    (f"({one_line(args, 40)})", "cyan"),
                    (f" {fmt_ms(event.duration_ms)}", "dim"),
                    (" mocked" if event.mocked else "", "magenta"),
                )
            case Error():
                label = Text.assemble(
                    (f"{FAIL_ICON} ", "bold red"),
                    (f"{event.where} error ", "bold red"),
                    (one_line(f"{event.kind}: {event.message}", 60), ""),
                )
                node = ChainNode(
                    "error", label, turn=event.turn, seq=event.seq, failed=True, events=[event]
                )
                (call.children if call is not None else nodes).append(node)
                if call is not None:
                    call.failed = True
            case HistoryTrimmed():
                label = Text(
                    f"✂ history trimmed {event.tokens_before} → {event.tokens_after} tokens",
                    style="yellow",
                )
                nodes.append(
                    ChainNode("trim", label, turn=event.turn, seq=event.seq, events=[event])
                )
            case _:
                pass
    return nodes


def _close_call(call: ChainNode, request: ModelRequest | None, response: ModelResponse) -> None:
    call.events.append(response)
    call.seq = response.seq
    usage = response.usage or {}
    tokens = usage.get("total_tokens")
    calls = response.message.get("tool_calls") or []
    what = (
        "→ " + ", ".join(str((c.get("function") or {}).get("name")) for c in calls)
        if calls
        else "→ answer"
    )
    call.label = Text.assemble(
        ("◆ ", "blue"),
        ("model call ", "bold"),
        (what, ""),
        (f"  {tokens} tok" if tokens is not None else "", "dim"),
        (f"  {fmt_ms(response.latency_ms)}", "dim"),
    )
    call.children.append(
        ChainNode(
            "response",
            Text(f"response · {response.finish_reason or '?'}"),
            turn=response.turn,
            seq=response.seq,
            events=[response],
        )
    )
    if response.chunks and request is not None:
        call.children.append(
            ChainNode(
                "chunks",
                Text(f"raw chunks · {response.chunks}"),
                turn=response.turn,
                seq=request.seq + 1,
                seq_end=response.seq - 1,
                count=response.chunks,
            )
        )


def turn_label(turn: int, children: list[ChainNode]) -> Text:
    """`✔ turn 3  2 tool calls`, `✔ turn 4  answer`; a turn that ended without an answer (a
    timeout, a failed model call) says what stopped it instead."""
    icon, style = _icon(not any(node.failed for node in children))
    return Text.assemble(
        (f"{icon} ", style),
        ("turn ", "bold"),
        (str(turn), "bold"),
        ("  " + turn_outcome(children), "dim"),
    )


def turn_outcome(children: list[ChainNode]) -> str:
    tools = sum(1 for node in children if node.kind == "tool")
    if tools:
        return plural(tools, "tool call")
    answered = any(
        isinstance(e, ModelResponse) and not e.message.get("tool_calls")
        for node in children
        for e in node.events
    )
    if answered:
        return "answer"
    errors = [e for node in _walk_nodes(children) for e in node.events if isinstance(e, Error)]
    if errors:
        return f"no answer: {errors[-1].kind}"
    return "no answer"


def _walk_nodes(nodes: list[ChainNode]) -> list[ChainNode]:
    found: list[ChainNode] = []
    for node in nodes:
        found.append(node)
        found.extend(_walk_nodes(node.children))
    return found


def find_node(nodes: list[ChainNode], seq: int) -> ChainNode | None:
    """The deepest node that shows event `seq` (what jump-to-error selects)."""
    for node in nodes:
        inner = find_node(node.children, seq)
        if inner is not None:
            return inner
        if seq in node.seqs():
            return node
    return None
