"""The decision chain as tree nodes: pure functions from a turn's events to labelled nodes.

A turn is loaded only when its node is expanded, and without its raw chunks or MCP frames
(those are fetched by seq range when their node is selected), so a run of any length costs
one small query per opened turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from rich.console import Group, RenderableType
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
from traces.tree import ModelCallNode, ToolCallNode, TurnNode, answer_label, build_chain
from workbench.engine.recording.fork.tool_policy import call_label, call_outcome, recorded_decisions
from workbench.engine.views.outline import TurnGlance, TurnSummary
from workbench.tui.render import (
    FAIL_ICON,
    STATUS_ICONS,
    STATUS_STYLES,
    TOOL_MARKS,
    TURN_MARKS,
    fmt_count,
    fmt_ms,
    one_line,
    plural,
    render_arguments,
)

# What a model call's tokens cost, `$0.0012`; empty when the model has no price.
Pricer = Callable[[int, int], str]

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
    "not_run",
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
    asked: dict[str, Any] | None = None  # a call asked for and never started (not_run)

    def seqs(self) -> set[int]:
        found = {e.seq for e in self.events}
        if self.seq is not None:
            found.add(self.seq)
        return found


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


def turn_node(turn: int, summary: TurnSummary | None = None) -> ChainNode:
    """A collapsed turn, with its status and figures when the run's summary has them; its
    children come from `turn_children` once expanded."""
    if summary is None:
        label = Text.assemble(("turn ", "bold"), (str(turn), "bold"))
        return ChainNode("turn", label, turn=turn)
    outcome = plural(summary.tools_started, "tool call") if summary.tools_started else ""
    if summary.tools_not_run:
        outcome += (", " if outcome else "") + f"{summary.tools_not_run} not run"
    if not outcome:
        outcome = "answer" if summary.answered else _no_answer(summary.last_error)
    return ChainNode(
        "turn",
        _turn_text(turn, summary.status, outcome, summary),
        turn=turn,
        failed=summary.status == "error",
    )


def _no_answer(error_kind: str | None) -> str:
    return f"no answer: {error_kind}" if error_kind else "no answer"


def _turn_text(turn: int, glance: TurnGlance, outcome: str, summary: TurnSummary | None) -> Text:
    """`✔ turn 3  2 tool calls  · 1.2s · 592 tok · $0.0003`"""
    icon, style = TURN_MARKS[glance]
    label = Text.assemble(
        (f"{icon} ", style), ("turn ", "bold"), (str(turn), "bold"), ("  " + outcome, "dim")
    )
    if summary is not None:
        label.append_text(_figures(summary.wall_ms, summary.tokens, summary.cost))
    return label


def _figures(latency_ms: float | None, tokens: int | None, cost: str) -> Text:
    """A node's latency, tokens and cost, dim after its label (what it lacks is left out)."""
    parts = [fmt_ms(latency_ms)] if latency_ms is not None else []
    if tokens is not None:
        parts.append(f"{fmt_count(tokens)} tok")
    if cost:
        parts.append(cost)
    return Text("  · " + " · ".join(parts), style="dim") if parts else Text("")


def turn_children(
    events: list[Event], start: Event | None = None, cost: Pricer | None = None
) -> list[ChainNode]:
    """One turn's skeleton events (see SKELETON_TYPES) as nodes: its model calls and tool
    calls as `traces.tree` pairs them, the calls it asked for that never started, errors
    and trims, in the order they happened. An error raised while a model call was waiting
    for its answer sits under that call; `cost` prices a model call's tokens. The run's
    `start` (its run_start) names each tool's side-effect policy in a re-run
    (`meta.tool_policy`): each call is marked with its policy and what became of it."""
    policies = recorded_decisions(start.meta) if isinstance(start, RunStart) else {}
    placed: list[tuple[float, ChainNode]] = []
    for turn in build_chain(events).turns:
        calls = [(call, _model_call_node(call)) for call in turn.model_calls]
        placed += [(_started(call), node) for call, node in calls]
        placed += [
            (tool.start.seq, _tool_node(tool, policies.get(tool.name))) for tool in turn.tool_calls
        ]
        placed += [(trim.seq, _trim_node(trim)) for trim in turn.trims]
        # After everything the turn did: the loop refused them once the answer was in.
        last = max((e.seq for e in turn.events), default=0) + 0.5
        placed += [(last, _not_run_node(turn, call)) for call in turn.calls_not_run]
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
                _close_call(node, call.request, call.response, cost)
            else:
                _unanswered(node, call)
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


def _unanswered(node: ChainNode, call: ModelCallNode) -> None:
    """A model call without an answer: failed (its error sits under it) or cut off."""
    request, error = call.request, call.error
    icon, style = TURN_MARKS["error" if node.failed else "running"]
    what = f": {error.kind}" if error is not None else (": no answer" if not node.failed else "")
    latency = None
    if request is not None and error is not None:
        latency = (error.ts - request.ts).total_seconds() * 1000
    node.label = Text.assemble(
        (f"{icon} ", style),
        ("model call", "bold"),
        (f" · attempt {call.attempt}{what}", style if node.failed else "dim"),
    )
    node.label.append_text(_figures(latency, None, ""))


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
    outcome = tool.outcome
    failed = start.parse_error is not None or (end is not None and not end.ok)
    icon, style, word = TOOL_MARKS[outcome]
    if failed and outcome == "running":  # arguments that did not parse: nothing ran
        icon, style, word = TOOL_MARKS["error"]
    label = Text.assemble(
        (f"{icon} ", style),
        (start.name, "bold"),
        (f"({one_line(start.arguments_raw, 40)})", "cyan"),
    )
    # In a re-run the policy's mark says what became of the call (`[policy mock → mocked]`).
    policy_mark = _policy_mark(policy, end) if end is not None else ("", "")
    if word and not policy_mark[0]:
        label.append(f" {word}", style=style)
    if failed and outcome not in ("error", "running"):  # a mocked or replayed error result
        label.append(f" {TOOL_MARKS['error'][2]}", style=TOOL_MARKS["error"][1])
    if end is None:
        return ChainNode(
            "tool", label, turn=start.turn, seq=start.seq, failed=failed, events=[start]
        )
    label.append_text(_figures(end.duration_ms, None, ""))
    label.append_text(Text(*policy_mark))
    return ChainNode(
        "tool",
        label,
        turn=start.turn,
        seq=start.seq,
        seq_end=end.seq,
        failed=failed,
        events=[start, end],
    )


def _policy_mark(policy: str | None, end: ToolEnd) -> tuple[str, str]:
    label = call_label(policy, end)
    if label is None:
        return "", ""
    return f" [{label}]", OUTCOME_STYLE.get(call_outcome(end) or "", "")


def _not_run_node(turn: TurnNode, call: dict[str, Any]) -> ChainNode:
    """A call the model asked for that never started: the loop refused a repeat of the
    previous turn's calls, or a limit ended the run first."""
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    name = str((function or {}).get("name") or "?")
    arguments = str((function or {}).get("arguments") or "")
    icon, style, word = TOOL_MARKS["not_run"]
    label = Text.assemble(
        (f"{icon} ", style),
        (name, "bold"),
        (f"({one_line(arguments, 40)})", "cyan"),
        (f" {word}", style),
    )
    return ChainNode("not_run", label, turn=turn.turn, asked=call)


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


def _close_call(
    call: ChainNode,
    request: ModelRequest | None,
    response: ModelResponse,
    cost: Pricer | None = None,
) -> None:
    call.events.append(response)
    call.seq = response.seq
    usage = response.usage or {}
    tokens = usage.get("total_tokens")
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    priced = ""
    if cost is not None and isinstance(prompt, int) and isinstance(completion, int):
        priced = cost(prompt, completion)
    calls = response.message.get("tool_calls") or []
    what = (
        "→ " + ", ".join(str((c.get("function") or {}).get("name")) for c in calls)
        if calls
        else "→ answer"
    )
    icon, style = TURN_MARKS["error" if call.failed else "ok"]
    call.label = Text.assemble((f"{icon} ", style), ("model call ", "bold"), (what, ""))
    call.label.append_text(
        _figures(response.latency_ms, tokens if isinstance(tokens, int) else None, priced)
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


def turn_label(turn: int, children: list[ChainNode], summary: TurnSummary | None = None) -> Text:
    """`✔ turn 3  2 tool calls  · 1.2s · 592 tok`, `✔ turn 4  answer`; a turn that ended
    without an answer (a timeout, a failed model call) says what stopped it instead, and
    one whose calls were refused is marked so, never with a check."""
    return _turn_text(turn, turn_glance(children), turn_outcome(children), summary)


def turn_glance(children: list[ChainNode]) -> TurnGlance:
    if any(node.failed for node in children):
        return "error"
    if any(node.kind == "not_run" for node in children):
        return "not_run"
    return "ok"


def turn_outcome(children: list[ChainNode]) -> str:
    tools = sum(1 for node in children if node.kind == "tool")
    refused = sum(1 for node in children if node.kind == "not_run")
    if tools or refused:
        said = [plural(tools, "tool call")] if tools else []
        return ", ".join([*said, *([f"{refused} not run"] if refused else [])])
    answered = any(
        isinstance(e, ModelResponse) and not e.message.get("tool_calls")
        for node in children
        for e in node.events
    )
    if answered:
        return "answer"
    errors = [e for node in _walk_nodes(children) for e in node.events if isinstance(e, Error)]
    return _no_answer(errors[-1].kind if errors else None)


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


def not_run_detail(node: ChainNode) -> RenderableType:
    """A call the model asked for that never started, and why that happens."""
    asked = node.asked or {}
    function = asked.get("function") if isinstance(asked.get("function"), dict) else {}
    return Group(
        node.label,
        Text(
            "The model asked for this call and it never ran: the loop refuses a call that "
            "repeats the previous turn's calls with the same arguments, and a limit (turns, "
            "tokens, time) can end the run before it starts.",
            style="dim",
        ),
        Text.assemble(("call id ", "bold dim"), str(asked.get("id") or "—")),
        render_arguments((function or {}).get("arguments")),
    )


def copy_value(node: ChainNode) -> tuple[str, str] | None:
    """What `y` copies from a node: (what it is, its text), or None for the run id."""
    for event in reversed(node.events):
        match event:
            case ToolEnd():
                return f"{event.name} result", event.error or event.result
            case ToolStart():
                return f"{event.name} arguments", event.arguments_raw
            case ModelResponse():
                content = event.message.get("content")
                if isinstance(content, str) and content:
                    return "the model's answer", content
                return "the model's message", json.dumps(event.message, indent=2)
            case Error():
                return "the error", f"{event.kind}: {event.message}"
            case RunEnd():
                return f"the {answer_label(event.status)}", event.final_answer or event.reason
            case RunStart():
                return "the task", event.task
            case _:
                pass
    return None
