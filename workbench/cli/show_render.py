"""`workbench show RUN` as text: the decision chain turn by turn, with the call ids that
`fork --mock` takes, calls the model asked for that never ran, tokens (and cost, when
`<home>/prices.toml` prices the model) per turn and per run."""

from __future__ import annotations

import json
from typing import Any

from traces.tree import RunChain, TurnNode
from workbench.cli.common import counted
from workbench.engine.recording.tool_policy import call_label, recorded_decisions
from workbench.engine.views.cost import Prices
from workbench.engine.views.timeline import Timeline


def clip(value: Any, width: int = 300) -> str:
    if value is None:
        return ""
    # Message content is usually text, but a trace may hold any JSON there (content parts).
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


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


def chain_lines(chain: RunChain, timeline: Timeline, prices: Prices) -> list[str]:
    lines: list[str] = []
    start = chain.start
    model = start.model if start is not None else ""
    if start is not None:
        lines.append(f"run {chain.run_id}  model {start.model}  tools {len(start.tools)}")
        lines.append(f"task: {clip(start.task)}")
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
    for turn in chain.turns:
        figures = tokens.get(turn.turn)
        usage = (
            " · " + _tokens(figures.input_tokens, figures.output_tokens, model, prices)
            if figures is not None and (figures.input_tokens or figures.output_tokens)
            else ""
        )
        lines.append(f"\n── turn {turn.turn} [{turn.status}]{usage}")
        lines += _turn_lines(chain, turn)
    lines.append("")
    lines += _end_lines(chain, model, prices)
    return lines


def _turn_lines(chain: RunChain, turn: TurnNode) -> list[str]:
    lines: list[str] = []
    policies = recorded_decisions(chain.start.meta) if chain.start is not None else {}
    request = turn.request
    if request is not None:
        last = request.messages[-1] if request.messages else {}
        lines.append(
            f"  request: {len(request.messages)} messages, {len(request.tools)} tools, "
            f"~{request.estimated_tokens} tokens; last {last.get('role', '?')}: "
            f"{clip(str(last.get('content') or ''), 120)}"
        )
    for call in turn.model_calls:
        if call.error is not None:
            lines.append(
                f"  attempt {call.attempt} failed: {call.error.kind}: "
                f"{clip(call.error.message, 160)}"
            )
    response = turn.response
    if response is not None:
        content = response.message.get("content")
        lines.append(
            f"  response ({response.finish_reason}, {response.latency_ms:.0f} ms, "
            f"attempt {response.attempt}): {clip(content, 200) or '(no text)'}"
        )
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
            f"{tool.call_id} {clip(tool.start.arguments_raw, 160)}"
        )
        if tool.start.parse_error:
            lines.append(f"    arguments: {tool.start.parse_error}")
        if tool.end is not None:
            lines.append(f"    → {clip(tool.end.result, 200)}")
        if tool.mcp:
            lines.append(f"    {counted(len(tool.mcp), 'MCP frame')}")
    for asked in turn.calls_not_run:
        function = asked.get("function")
        function = function if isinstance(function, dict) else {}
        arguments = function.get("arguments")
        shown = arguments if isinstance(arguments, str) else json.dumps(arguments)
        lines.append(
            f"  tool {function.get('name', '?')} [{_not_run_reason(chain, turn)}] "
            f"{asked.get('id', '?')} {clip(shown, 160)}"
        )
    for trim in turn.trims:
        lines.append(
            f"  history trimmed: {trim.tokens_before} → {trim.tokens_after} tokens, "
            f"{counted(trim.rounds_dropped, 'round')} dropped"
        )
    for error in turn.errors:
        lines.append(f"  error ({error.where}): {error.kind}: {clip(error.message, 160)}")
    return lines


def _end_lines(chain: RunChain, model: str, prices: Prices) -> list[str]:
    end = chain.end
    if end is None:
        return ["end: incomplete (the trace has no run_end; the run was killed or is running)"]
    layer = f" ({end.timeout_layer})" if end.timeout_layer else ""
    reason = f": {end.reason}" if end.reason else ""
    lines = [f"end: {end.status}{layer}{reason}"]
    if end.final_answer:
        # Only a completed run's last text is its answer; otherwise it is what the model
        # said before the run was stopped.
        label = "answer" if end.status == "completed" else "last text (not an answer)"
        lines.append(f"{label}: {clip(end.final_answer, 500)}")
    totals = end.totals
    cost = prices.cost(model, totals.input_tokens, totals.output_tokens)
    priced = f", {prices.format(cost)}" if cost is not None else ""
    lines.append(
        f"totals: {counted(totals.turns, 'turn')}, {counted(totals.model_calls, 'model call')}, "
        f"{counted(totals.tool_calls, 'tool call')} ({totals.tool_errors} failed), "
        f"{totals.total_tokens} tokens ({totals.input_tokens} in / {totals.output_tokens} out)"
        f"{priced}, {totals.duration_ms:.0f} ms"
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
