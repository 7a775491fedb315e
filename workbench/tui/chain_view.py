"""The decision chain as tree nodes: pure functions from a turn's events to labelled nodes.

A turn is loaded only when its node is expanded, and without its raw chunks or MCP frames
(those are fetched by seq range when their node is selected), so a run of any length costs
one small query per opened turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

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
)
from traces.tree import ModelCallNode, ToolCallNode, build_chain
from workbench.engine.recording.tool_policy import call_label, call_outcome, recorded_decisions
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
    "tool_def",
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
    schema: dict[str, Any] | None = None  # a tool offered at the start, in full
    source: str | None = None  # where that tool came from

    def seqs(self) -> set[int]:
        found = {e.seq for e in self.events}
        if self.seq is not None:
            found.add(self.seq)
        return found


def _icon(ok: bool) -> tuple[str, str]:
    return (OK_ICON, "green") if ok else (FAIL_ICON, "bold red")


def start_node(event: RunStart) -> ChainNode:
    label = Text.assemble(("● ", "cyan"), ("start ", "bold"), (one_line(event.task, 60), ""))
    node = ChainNode("start", label, seq=event.seq, events=[event])
    for tool in event.tools:
        function = tool.get("function") or tool
        name = str(function.get("name"))
        described = one_line(str(function.get("description") or ""), 50)
        node.children.append(
            ChainNode(
                "tool_def",
                Text.assemble(("tool ", "dim"), (name, "bold"), (f"  {described}", "dim")),
                schema=tool,
                source=event.tool_sources.get(name),
            )
        )
    return node


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


def turn_groups(first_turn: int, last_turn: int) -> list[ChainNode]:
    """Top-level groups of turns for long runs: "turns 1–100", "turns 101–200", …"""
    groups = []
    for first in range(first_turn, last_turn + 1, TURNS_PER_GROUP):
        last = min(first + TURNS_PER_GROUP - 1, last_turn)
        label = Text.assemble(("turns ", "bold"), (f"{first}–{last}", "bold"))
        groups.append(ChainNode("turns", label, turn=first, last_turn=last))
    return groups


def turn_node(turn: int, failed: bool | None = None) -> ChainNode:
    """A collapsed turn; its children come from `turn_children` once expanded."""
    label = Text.assemble(("turn ", "bold"), (str(turn), "bold"))
    return ChainNode("turn", label, turn=turn, failed=bool(failed))


def turn_children(events: list[Event], start: Event | None = None) -> list[ChainNode]:
    """One turn's skeleton events (see SKELETON_TYPES) as nodes: its model calls and tool
    calls as `traces.tree` pairs them, errors and trims, in the order they happened. An
    error raised while a model call was waiting for its answer sits under that call.
    The run's `start` (its run_start) names each tool's side-effect policy in a re-run
    (`meta.tool_policy`): each call is marked with its policy and what became of it."""
    policies = recorded_decisions(start.meta) if isinstance(start, RunStart) else {}
    placed: list[tuple[int, ChainNode]] = []
    for turn in build_chain(events).turns:
        calls = [(call, _model_call_node(call)) for call in turn.model_calls]
        placed += [(_started(call), node) for call, node in calls]
        placed += [
            (tool.start.seq, _tool_node(tool, policies.get(tool.name))) for tool in turn.tool_calls
        ]
        placed += [(trim.seq, _trim_node(trim)) for trim in turn.trims]
        for error in (e for e in turn.events if isinstance(e, Error)):
            node = _error_node(error)
            owner = _waiting_call(calls, error.seq)
            if owner is None:
                placed.append((error.seq, node))
            else:
                owner.children.append(node)
                owner.failed = True
        for call, node in calls:
            if call.response is not None:
                _close_call(node, call.request, call.response)
    return [node for _, node in sorted(placed, key=lambda item: item[0])]


def _started(call: ModelCallNode) -> int:
    first = call.request or call.response or (call.chunks[0] if call.chunks else call.error)
    return first.seq if first is not None else 0


def _waiting_call(calls: list[tuple[ModelCallNode, ChainNode]], seq: int) -> ChainNode | None:
    """The node of the model call sent last before event `seq`, if it was still waiting for
    its answer then."""
    sent = [(c, node) for c, node in calls if c.request is not None and c.request.seq < seq]
    if not sent:
        return None
    call, node = sent[-1]
    return node if call.response is None or call.response.seq > seq else None


def _model_call_node(call: ModelCallNode) -> ChainNode:
    request = call.request
    if request is None:  # a response without its request (damaged trace)
        return ChainNode("model_call", Text("◇ model call", style="bold"), turn=_turn_of(call))
    label = Text.assemble(
        ("◇ ", "blue"), ("model call", "bold"), (f" · attempt {request.attempt}", "dim")
    )
    node = ChainNode("model_call", label, turn=request.turn, seq=request.seq)
    node.children.append(
        ChainNode(
            "request",
            Text(f"request · {len(request.messages)} messages, {len(request.tools)} tools"),
            turn=request.turn,
            seq=request.seq,
        )
    )
    return node


def _turn_of(call: ModelCallNode) -> int | None:
    event = call.request or call.response or call.error
    return event.turn if event is not None else None


# How a call's outcome under its tool policy is marked (`tool_policy.call_outcome`).
OUTCOME_STYLE = {
    "recorded": "cyan",
    "mocked": "magenta",
    "live": "yellow",
    "denied": "bold red",
    "refused": "bold red",
    "failed": "red",
}


def _tool_node(tool: ToolCallNode, policy: str | None = None) -> ChainNode:
    start, end = tool.start, tool.end
    failed = start.parse_error is not None
    if end is None:
        icon, style = _icon(not failed) if failed else ("…", "yellow")
        label = Text.assemble(
            (f"{icon} ", style),
            (start.name, "bold"),
            (f"({one_line(start.arguments_raw, 40)})", "cyan"),
        )
        return ChainNode(
            "tool", label, turn=start.turn, seq=start.seq, failed=failed, events=[start]
        )
    icon, style = _icon(end.ok)
    label = Text.assemble(
        (f"{icon} ", style),
        (end.name, "bold"),
        (f"({one_line(start.arguments_raw, 40)})", "cyan"),
        (f" {fmt_ms(end.duration_ms)}", "dim"),
        (" mocked" if end.mocked and policy is None else "", "magenta"),
        (" observed" if end.observed else "", "blue"),
        _policy_mark(policy, end),
    )
    return ChainNode(
        "tool",
        label,
        turn=start.turn,
        seq=start.seq,
        seq_end=end.seq,
        failed=failed or not end.ok,
        events=[start, end],
    )


def _policy_mark(policy: str | None, end: ToolEnd) -> tuple[str, str]:
    label = call_label(policy, end)
    if label is None:
        return "", ""
    return f" [{label}]", OUTCOME_STYLE.get(call_outcome(end) or "", "")


def _error_node(error: Error) -> ChainNode:
    label = Text.assemble(
        (f"{FAIL_ICON} ", "bold red"),
        (f"{error.where} error ", "bold red"),
        (one_line(f"{error.kind}: {error.message}", 60), ""),
    )
    return ChainNode("error", label, turn=error.turn, seq=error.seq, failed=True, events=[error])


def _trim_node(trim: HistoryTrimmed) -> ChainNode:
    label = Text(
        f"✂ history trimmed {trim.tokens_before} → {trim.tokens_after} tokens", style="yellow"
    )
    return ChainNode("trim", label, turn=trim.turn, seq=trim.seq, events=[trim])


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
