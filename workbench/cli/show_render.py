"""`workbench show RUN` as text: the decision chain turn by turn, with the call ids that
`fork --mock` takes, calls the model asked for that never ran, tokens (and cost, when
`<home>/prices.toml` prices the model) per turn and per run. `--full` adds the whole system
prompt and every message as sent, and cuts nothing."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeAlias

from agent_core.wire.chat import content_text, tool_calls
from traces.prices import Prices
from traces.text import short_ms
from traces.tree import RunChain, TurnNode, answer_label
from workbench.cli.common import Paint, counted
from workbench.engine.recording.fork.tool_policy import call_label, recorded_decisions
from workbench.engine.review.notes import annotation_line
from workbench.engine.views.timeline import Timeline

Clip: TypeAlias = Callable[[Any, int], str]


def clip(value: Any, width: int = 300, full: bool = False) -> str:
    """A value on one line, cut at `width` unless `full`. Message content in parts (a list
    of text parts) is shown as its text, not as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        text = value
    elif isinstance(value, list):
        text = content_text(value)
    else:
        text = json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "\\n")
    return text if full or len(text) <= width else text[: width - 1] + "…"


def _block(text: str, indent: str = "      ") -> list[str]:
    """Text as it is, line by line, indented (what --full shows of a prompt or message)."""
    return [indent + line if line else indent.rstrip() for line in text.splitlines() or [""]]


def _message_lines(message: dict[str, Any]) -> list[str]:
    role = str(message.get("role", "?"))
    ids = f" ({message['tool_call_id']})" if message.get("tool_call_id") else ""
    lines = [f"    {role}{ids}:"]
    text = content_text(message.get("content"))
    if text:
        lines += _block(text)
    for call in tool_calls(message):
        lines.append(f"      → {call.name} {call.id} {call.arguments_raw}")
    return lines


def _not_run_reason(chain: RunChain, turn: TurnNode) -> str:
    end = chain.end
    last = chain.turns[-1].turn if chain.turns else None
    if end is not None and turn.turn == last:
        if end.status == "duplicate_tool_calls":
            return "refused: it repeats the previous turn's call; the run stopped"
        return f"not run: the run ended ({end.status})"
    return "not run"


def _tokens(input_tokens: int, output_tokens: int, model: str, prices: Prices) -> str:
    text = f"{input_tokens} in / {output_tokens} out tokens"
    cost = prices.cost(model, input_tokens, output_tokens)
    return text + (f", {prices.format(cost)}" if cost is not None else "")


def chain_lines(
    chain: RunChain,
    timeline: Timeline,
    prices: Prices,
    *,
    full: bool = False,
    paint: Paint | None = None,
    notes: Sequence[dict[str, Any]] = (),
) -> list[str]:
    """The run as `show` prints it; `notes` are its annotations (`TraceStore.annotations`):
    a turn or a call annotated is marked `✎N`, and they are listed after the end."""
    cut: Clip = partial(clip, full=full)
    paint = paint or Paint(False)
    lines: list[str] = []
    start = chain.start
    model = start.model if start is not None else ""
    if start is not None:
        lines.append(
            paint(f"run {chain.run_id}", "bold")
            + f"  model {start.model}  tools {len(start.tools)}"
            + _mark([n for n in notes if n["turn"] is None])
        )
        lines.append(f"task: {cut(start.task, 300)}")
        if full:
            lines.append("system prompt:" if start.system_prompt else "system prompt: (none)")
            if start.system_prompt:
                lines += _block(start.system_prompt, "    ")
        if start.origin == "fork":
            lines.append(f"origin: fork of {start.parent_run_id} at turn {start.fork_turn}")
        elif start.origin != "agent":
            client = f" by {start.client}" if start.client else ""
            parent = f", follows run {start.parent_run_id[:12]}" if start.parent_run_id else ""
            lines.append(f"origin: {start.origin}{client}{parent}")
        policies = recorded_decisions(start.meta)
        if policies:
            shown = ", ".join(f"{name}={policy}" for name, policy in sorted(policies.items()))
            lines.append(f"tool policy: {shown}")
    tokens = {turn.turn: turn for turn in timeline.turns}
    sent: list[Any] = []  # the messages the previous turn sent: --full shows only new ones
    for turn in chain.turns:
        figures = tokens.get(turn.turn)
        usage = (
            " · " + _tokens(figures.input_tokens, figures.output_tokens, model, prices)
            if figures is not None and (figures.input_tokens or figures.output_tokens)
            else ""
        )
        status = paint(f"[{turn.status}]", "green" if turn.status == "ok" else "red")
        mark = _mark([n for n in notes if n["turn"] == turn.turn and n["call_id"] is None])
        lines.append("\n" + paint(f"── turn {turn.turn}", "bold") + f" {status}{usage}{mark}")
        if full and turn.request is not None:
            messages = list(turn.request.messages)
            # History is resent each turn; a trimmed one is not a continuation: show it all.
            new = messages[len(sent) :] if messages[: len(sent)] == sent else messages
            lines.append(f"  messages sent: {len(messages)} ({len(new)} new)")
            for message in new:
                lines += _message_lines(message if isinstance(message, dict) else {})
            sent = messages
        lines += [
            paint(line, "red") if line.startswith(("  error", "  attempt")) else line
            for line in _turn_lines(chain, turn, cut, full, notes)
        ]
    lines.append("")
    lines += _end_lines(chain, model, prices, timeline.end_ms, paint, cut)
    if notes:
        lines.append(paint(f"annotations ({len(notes)}):", "bold"))
        lines += [f"  {annotation_line(note)}" for note in notes]
    return lines


def _mark(notes: Sequence[dict[str, Any]]) -> str:
    """` ✎N` after a turn or call that N annotations are on (`workbench note`)."""
    return f" ✎{len(notes)}" if notes else ""


def _turn_lines(
    chain: RunChain, turn: TurnNode, cut: Clip, full: bool, notes: Sequence[dict[str, Any]]
) -> list[str]:
    lines: list[str] = []
    policies = recorded_decisions(chain.start.meta) if chain.start is not None else {}
    request = turn.request
    if request is not None:
        last = request.messages[-1] if request.messages else {}
        lines.append(
            f"  request: {len(request.messages)} messages, {len(request.tools)} tools, "
            f"~{request.estimated_tokens} tokens; last {last.get('role', '?')}: "
            f"{cut(last.get('content'), 120)}"
        )
    for call in turn.model_calls:
        if call.error is not None:
            lines.append(
                f"  attempt {call.attempt} failed: {call.error.kind}: "
                f"{cut(call.error.message, 160)}"
            )
    response = turn.response
    if response is not None:
        content = response.message.get("content")
        head = (
            f"  response ({response.finish_reason}, {response.latency_ms:.0f} ms, "
            f"attempt {response.attempt})"
        )
        if full:  # the message as the model wrote it, its lines kept
            lines += [head + ":", *_message_lines(response.message)[1:]]
        else:
            lines.append(f"{head}: {cut(content, 200) or '(no text)'}")
    for tool in turn.tool_calls:
        timing = f"{tool.duration_ms:.0f} ms" if tool.duration_ms is not None else "running"
        end = tool.end
        flags = "".join(
            f", {flag}"
            for flag, on in (
                ("observed", end is not None and end.observed),  # the client ran it
                ("mocked", end is not None and end.mocked),
                ("replayed", end is not None and end.replayed),
            )
            if on
        )
        label = call_label(policies.get(tool.name), end) if policies else None
        flags += f", {label}" if label else ""
        lines.append(
            f"  tool {tool.name} [{tool.status}, {timing}, {tool.start.source}{flags}] "
            f"{tool.call_id} {cut(tool.start.arguments_raw, 160)}"
            + _mark([n for n in notes if n["turn"] == turn.turn and n["call_id"] == tool.call_id])
        )
        if tool.start.parse_error:
            lines.append(f"    arguments: {tool.start.parse_error}")
        if tool.end is not None:
            lines.append(f"    → {cut(tool.end.result, 200)}")
        if tool.mcp:
            lines.append(f"    {counted(len(tool.mcp), 'MCP frame')}")
    for asked in turn.calls_not_run:
        function = asked.get("function")
        function = function if isinstance(function, dict) else {}
        arguments = function.get("arguments")
        shown = arguments if isinstance(arguments, str) else json.dumps(arguments)
        lines.append(
            f"  tool {function.get('name', '?')} [{_not_run_reason(chain, turn)}] "
            f"{asked.get('id', '?')} {cut(shown, 160)}"
        )
    for trim in turn.trims:
        lines.append(
            f"  history trimmed: {trim.tokens_before} → {trim.tokens_after} tokens, "
            f"{counted(trim.rounds_dropped, 'round')} dropped"
        )
    for error in turn.errors:
        lines.append(f"  error ({error.where}): {error.kind}: {cut(error.message, 160)}")
    return lines


def _end_lines(
    chain: RunChain, model: str, prices: Prices, duration_ms: float, paint: Paint, cut: Clip
) -> list[str]:
    end = chain.end
    if end is None:
        return ["end: incomplete (the trace has no run_end; the run was killed or is running)"]
    layer = f" ({end.timeout_layer})" if end.timeout_layer else ""
    reason = f": {end.reason}" if end.reason else ""
    lines = [f"end: {paint.status(end.status, end.status)}{layer}{reason}"]
    if end.final_answer:
        lines.append(f"{answer_label(end.status)}: {cut(end.final_answer, 500)}")
    totals = end.totals
    cost = prices.cost(model, totals.input_tokens, totals.output_tokens)
    priced = f", {prices.format(cost)}" if cost is not None else ""
    lines.append(
        f"totals: {counted(totals.turns, 'turn')}, {counted(totals.model_calls, 'model call')}, "
        f"{counted(totals.tool_calls, 'tool call')} ({totals.tool_errors} failed), "
        f"{totals.total_tokens} tokens ({totals.input_tokens} in / {totals.output_tokens} out)"
        f"{priced}, {short_ms(duration_ms)}"
    )
    ids = [call.call_id for turn in chain.turns for call in turn.tool_calls]
    if ids:
        lines.append(
            f"call ids for `workbench fork {chain.run_id[:8]} --turn N --mock CALL_ID=TEXT` "
            f"(a call made before turn N): {', '.join(ids[:12])}{' …' if len(ids) > 12 else ''}"
        )
    return lines


def turn_figures(timeline: Timeline, model: str, prices: Prices) -> dict[str, Any]:
    """Tokens (and cost, when priced) per turn and for the run, for `show --json`."""
    turns = [
        {
            "turn": turn.turn,
            "input_tokens": turn.input_tokens,
            "output_tokens": turn.output_tokens,
            "cost": prices.cost(model, turn.input_tokens, turn.output_tokens),
        }
        for turn in timeline.turns
    ]
    return {
        "turns": turns,
        "input_tokens": timeline.input_tokens,
        "output_tokens": timeline.output_tokens,
        "cost": prices.cost(model, timeline.input_tokens, timeline.output_tokens),
        "currency": prices.currency if prices else None,
    }
