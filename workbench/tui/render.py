"""Pure functions from store rows and trace events to Rich renderables.

Nothing here touches the App, the store or the clock, so every function can be unit-tested
alone and the screens stay thin: they fetch, then hand the data to one of these.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import partial
from typing import Any, assert_never

from rich.console import Group, RenderableType
from rich.json import JSON
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from traces.events import (
    Error,
    Event,
    HistoryTrimmed,
    McpMessage,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    RunEnd,
    RunStart,
    ToolEnd,
    ToolsChanged,
    ToolStart,
)
from traces.text import one_line as text_one_line
from traces.text import short_count, short_ms
from traces.tree import ToolCallOutcome, answer_label
from workbench.engine.views.outline import TurnGlance, event_is_failure

# Readable on dark and light themes: hue carries the meaning, bold marks the failures.
STATUS_STYLES: dict[str, str] = {
    "completed": "green",
    "max_turns": "yellow",
    "duplicate_tool_calls": "yellow",
    "token_budget": "yellow",
    "timeout": "dark_orange",
    "cancelled": "magenta",
    "error": "bold red",
    "incomplete": "cyan",
}
STATUS_ICONS: dict[str, str] = {
    "completed": "✔",
    "max_turns": "↻",
    "duplicate_tool_calls": "⧉",
    "token_budget": "Σ",
    "timeout": "⏱",
    "cancelled": "■",
    "error": "✖",
    "incomplete": "…",
}
OK_ICON = "✔"
FAIL_ICON = "✖"
NOT_RUN_ICON = "⊘"

# A tool call's mark in the decision chain, its style and the word beside it, for every
# outcome a call can have (`traces.tree.TOOL_CALL_OUTCOMES`; tests/tui/test_chain_marks.py
# holds the two together): a new outcome, a fork's per-tool policy say, is one more row.
TOOL_MARKS: dict[ToolCallOutcome, tuple[str, str, str]] = {
    "ok": (OK_ICON, "green", ""),
    "error": (FAIL_ICON, "bold red", "failed"),
    "running": ("…", "yellow", "no result"),
    "not_run": (NOT_RUN_ICON, "bold yellow", "not run: refused or stopped by a limit"),
    "mocked": ("◐", "magenta", "mocked"),
    "replayed": ("↺", "cyan", "replayed"),
    "observed": ("◉", "blue", "observed"),
}
# A turn's mark, from what its calls came to (`workbench.engine.views.outline.TurnGlance`).
TURN_MARKS: dict[TurnGlance, tuple[str, str]] = {
    "ok": (OK_ICON, "green"),
    "error": (FAIL_ICON, "bold red"),
    "not_run": (NOT_RUN_ICON, "bold yellow"),
    "running": ("…", "yellow"),
}


def status_text(status: str | None) -> Text:
    name = status or "incomplete"
    return Text(name, style=STATUS_STYLES.get(name, ""))


def status_badge(status: str | None) -> Text:
    name = status or "incomplete"
    return Text(f"{STATUS_ICONS.get(name, '?')} {name}", style=STATUS_STYLES.get(name, ""))


def short_id(run_id: str | None) -> str:
    return (run_id or "")[:8]


def fmt_time(value: datetime | str | None) -> str:
    """UTC wall time as recorded; never the local clock, so screens are reproducible."""
    if value is None:
        return "—"
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value.strftime("%Y-%m-%d %H:%M:%S")


def fmt_ms(ms: float | None) -> str:
    return "—" if ms is None else short_ms(ms)


def fmt_count(n: int | None) -> str:
    return "—" if n is None else short_count(n)


def plural(n: int | None, noun: str) -> str:
    """`1 turn`, `3 turns`, `0 tool calls`."""
    count = n or 0
    return f"{count} {noun}{'' if count == 1 else 's'}"


# The TUI cuts what people read at a word boundary when one is near.
one_line = partial(text_one_line, at_word=True)


# ---------------------------------------------------------------- events


def pretty_json(value: Any) -> RenderableType:
    try:
        return JSON.from_data(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return Text(repr(value))


def _kv(rows: Iterable[tuple[str, RenderableType | str | None] | None]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold dim", no_wrap=True)
    table.add_column(overflow="fold")
    for item in rows:
        if item is None or item[1] is None or item[1] == "":
            continue
        key, value = item
        table.add_row(key, Text(value) if isinstance(value, str) else value)
    return table


def _message_body(message: dict[str, Any]) -> RenderableType:
    parts: list[RenderableType] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(Text(content))
    elif content is None:
        parts.append(Text("(content: null)", style="dim italic"))
    else:
        parts.append(pretty_json(content))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        title = Text.assemble(
            ("tool call ", "dim"),
            (str(function.get("name")), "bold"),
            (f"  id={call.get('id')}", "dim"),
        )
        parts.append(title)
        parts.append(render_arguments(function.get("arguments")))
    extra = {k: v for k, v in message.items() if k not in {"role", "content", "tool_calls"}}
    if extra:
        parts.append(pretty_json(extra))
    return Group(*parts)


def render_arguments(arguments: Any) -> RenderableType:
    """A tool call's arguments: pretty JSON when they parse, else the text as sent."""
    if isinstance(arguments, str):
        try:
            return pretty_json(json.loads(arguments))
        except ValueError:
            return Text(arguments, style="cyan")
    return pretty_json(arguments)


ROLE_STYLES = {"system": "magenta", "user": "green", "assistant": "blue", "tool": "yellow"}


def render_message(message: dict[str, Any]) -> RenderableType:
    role = str(message.get("role", "?"))
    return Panel(
        _message_body(message),
        title=Text(role, style=f"bold {ROLE_STYLES.get(role, '')}"),
        title_align="left",
        border_style=ROLE_STYLES.get(role, "dim"),
        expand=True,
    )


def render_messages(messages: Sequence[dict[str, Any]]) -> RenderableType:
    return Group(*(render_message(m) for m in messages))


def tool_names(tools: Sequence[dict[str, Any]]) -> str:
    return ", ".join(str((t.get("function") or t).get("name")) for t in tools) or "none"


def render_chunks(chunks: Sequence[ModelChunk], total: int | None = None) -> RenderableType:
    table = Table(box=None, expand=True, header_style="bold dim")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("at", justify="right", no_wrap=True)
    table.add_column("Δ", justify="right", no_wrap=True)
    table.add_column("raw chunk", overflow="fold")
    previous = 0.0
    for chunk in chunks:
        table.add_row(
            str(chunk.index),
            f"{chunk.elapsed_ms:.0f}ms",
            f"+{chunk.elapsed_ms - previous:.0f}",
            Text(json.dumps(chunk.data, ensure_ascii=False)),
        )
        previous = chunk.elapsed_ms
    shown = len(chunks)
    if total is not None and total > shown:
        note = Text(f"showing {shown} of {total} chunks; step through the rest in replay (r)")
        return Group(table, Text(""), note)
    return table


def event_title(event: Event) -> Text:
    """Header line for the detail pane: type, seq, turn."""
    turn = f" · turn {event.turn}" if event.turn is not None else ""
    return Text.assemble((event.type, "bold"), (f"  seq {event.seq}{turn}", "dim"))


def render_event(event: Event) -> RenderableType:
    """The full detail of one event, as the detail pane and the replay stepper show it."""
    body: RenderableType
    match event:
        case RunStart():
            body = Group(
                _kv(
                    [
                        ("task", Text(event.task)),
                        ("model", event.model),
                        ("base url", event.base_url),
                        ("params", json.dumps(event.params) if event.params else None),
                        ("parent", _parent(event.parent_run_id, event.fork_turn))
                        if event.parent_run_id
                        else None,
                        ("origin", _origin(event.origin, event.client))
                        if event.origin != "agent"
                        else None,
                        ("schema", str(event.schema_version)),
                    ]
                ),
                Text("system prompt", style="bold dim"),
                Text(event.system_prompt or "(none)"),
                Text(f"tools offered ({len(event.tools)})", style="bold dim"),
                *(_tool_schema_line(t, event.tool_sources) for t in event.tools),
                *(
                    [
                        Text("edits", style="bold dim"),
                        pretty_json([e.model_dump() for e in event.edits]),
                    ]
                    if event.edits
                    else []
                ),
                Text("limits", style="bold dim"),
                pretty_json(event.limits.model_dump()),
            )
        case ModelRequest():
            body = Group(
                _kv(
                    [
                        ("attempt", str(event.attempt)),
                        ("stream", str(event.stream)),
                        ("est. tokens", str(event.estimated_tokens)),
                        ("params", json.dumps(event.params) if event.params else None),
                        ("tools", tool_names(event.tools)),
                    ]
                ),
                Text(f"messages as sent ({len(event.messages)})", style="bold dim"),
                render_messages(event.messages),
            )
        case ModelChunk():
            body = Group(
                _kv([("chunk", str(event.index)), ("at", f"{event.elapsed_ms:.1f}ms")]),
                pretty_json(event.data),
            )
        case ModelResponse():
            body = Group(
                _kv(
                    [
                        ("attempt", str(event.attempt)),
                        ("finish", event.finish_reason),
                        ("ttft", fmt_ms(event.ttft_ms)),
                        ("latency", fmt_ms(event.latency_ms)),
                        ("chunks", str(event.chunks)),
                        ("usage", json.dumps(event.usage) if event.usage else None),
                    ]
                ),
                Text("assembled response", style="bold dim"),
                render_message(event.message),
            )
        case ToolStart():
            args: RenderableType = (
                pretty_json(event.arguments)
                if event.arguments is not None
                else Text(f"parse error: {event.parse_error}", style="bold red")
            )
            body = Group(
                _kv(
                    [
                        ("tool", Text(event.name, style="bold")),
                        ("call id", event.call_id),
                        ("source", event.source),
                        ("reasoning", Text(event.reasoning) if event.reasoning else None),
                    ]
                ),
                Text("raw arguments", style="bold dim"),
                Text(event.arguments_raw, style="cyan"),
                Text("parsed arguments", style="bold dim"),
                args,
            )
        case ToolEnd():
            flags = [
                f for f in ("mocked", "replayed", "observed", "truncated") if getattr(event, f)
            ]
            body = Group(
                _kv(
                    [
                        ("tool", Text(event.name, style="bold")),
                        ("call id", event.call_id),
                        ("ok", Text(OK_ICON, "green") if event.ok else Text(FAIL_ICON, "bold red")),
                        ("error", Text(event.error, style="bold red") if event.error else None),
                        ("duration", fmt_ms(event.duration_ms)),
                        ("flags", ", ".join(flags) or None),
                    ]
                ),
                Text("result", style="bold dim"),
                Text(event.result),
            )
        case McpMessage():
            arrow = "→ server" if event.direction == "send" else "← server"
            body = Group(
                _kv([("server", event.server), ("direction", arrow)]), pretty_json(event.frame)
            )
        case ToolsChanged():
            body = Group(
                _kv(
                    [
                        ("source", event.source),
                        ("added", ", ".join(event.added) or None),
                        ("removed", ", ".join(event.removed) or None),
                        ("left out", ", ".join(event.dropped) or None),
                    ]
                ),
                Text("offered from the next turn", style="bold dim"),
                *[_tool_schema_line(tool, {}) for tool in event.tools],
            )
        case HistoryTrimmed():
            body = _kv(
                [
                    ("tokens", f"{event.tokens_before} → {event.tokens_after}"),
                    ("messages", f"{event.messages_before} → {event.messages_after}"),
                    ("rounds", f"kept {event.rounds_kept}, dropped {event.rounds_dropped}"),
                    ("summary", Text(event.summary) if event.summary else None),
                ]
            )
        case Error():
            body = _kv(
                [
                    ("where", event.where),
                    ("kind", Text(event.kind, style="bold red")),
                    ("message", Text(event.message)),
                    ("retriable", str(event.retriable)),
                    ("attempt", str(event.attempt) if event.attempt else None),
                    ("status", str(event.status_code) if event.status_code else None),
                ]
            )
        case RunEnd():
            totals = event.totals
            body = Group(
                _kv(
                    [
                        ("status", status_badge(event.status)),
                        ("reason", Text(event.reason) if event.reason else None),
                        ("timeout in", event.timeout_layer),
                        ("turns", str(totals.turns)),
                        ("model calls", str(totals.model_calls)),
                        ("tool calls", f"{totals.tool_calls} ({totals.tool_errors} failed)"),
                        (
                            "tokens",
                            f"{totals.total_tokens} (in {totals.input_tokens}, "
                            f"out {totals.output_tokens})",
                        ),
                        ("duration", fmt_ms(totals.duration_ms)),
                    ]
                ),
                Text(answer_label(event.status), style="bold dim"),
                Text(event.final_answer or "(none)"),
            )
        case _:
            assert_never(event)
    return Group(event_title(event), Text(""), body)


def _parent(run_id: str, fork_turn: int | None) -> str:
    # A captured follow-up run continues its parent's conversation; a fork starts at a turn.
    return run_id if fork_turn is None else f"{run_id} at turn {fork_turn}"


def _origin(origin: str, client: str | None) -> str:
    return f"{origin} by {client}" if client else origin


def _tool_schema_line(tool: dict[str, Any], sources: dict[str, str]) -> Text:
    """A tool as offered: name, source and its whole description, wrapped at words."""
    function = tool.get("function") or tool
    name = str(function.get("name"))
    return Text.assemble(
        ("• ", "dim"),
        (name, "bold"),
        (f" [{sources.get(name, 'builtin')}] ", "dim"),
        " ".join(str(function.get("description") or "").split()),
    )


def render_tool_schema(tool: dict[str, Any], source: str | None) -> RenderableType:
    """One offered tool in full: its description as written and its parameters."""
    function = tool.get("function") or tool
    return Group(
        Text.assemble(
            ("tool ", "dim"),
            (str(function.get("name")), "bold"),
            (f"  [{source or 'builtin'}]", "dim"),
        ),
        Text(""),
        Text("description", style="bold dim"),
        Text(str(function.get("description") or "(none)")),
        Text(""),
        Text("parameters", style="bold dim"),
        pretty_json(function.get("parameters") or {}),
    )


def event_summary(event: Event) -> str:
    """One line describing an event, for timelines and tree labels."""
    match event:
        case RunStart():
            return f"start · {event.model} · {one_line(event.task, 60)}"
        case ModelRequest():
            return f"request · {len(event.messages)} messages, {len(event.tools)} tools"
        case ModelChunk():
            return f"chunk {event.index} · +{event.elapsed_ms:.0f}ms"
        case ModelResponse():
            calls = event.message.get("tool_calls") or []
            what = (
                ", ".join(str((c.get("function") or {}).get("name")) for c in calls)
                if calls
                else one_line(event.message.get("content"), 50)
            )
            return f"response · {event.finish_reason or '?'} · {what}"
        case ToolStart():
            return f"tool {event.name}({one_line(event.arguments_raw, 50)})"
        case ToolEnd():
            mark = OK_ICON if event.ok else FAIL_ICON
            return f"{mark} {event.name} → {one_line(event.error or event.result, 50)}"
        case McpMessage():
            method = event.frame.get("method") or ("result" if "result" in event.frame else "error")
            return f"mcp {event.server} {'→' if event.direction == 'send' else '←'} {method}"
        case ToolsChanged():
            change = [f"+{name}" for name in event.added] + [f"-{name}" for name in event.removed]
            return f"tools changed · {event.source} · {' '.join(change) or 'same names'}"
        case HistoryTrimmed():
            return f"history trimmed · {event.tokens_before} → {event.tokens_after} tokens"
        case Error():
            return f"error · {event.where} · {event.kind}: {one_line(event.message, 50)}"
        case RunEnd():
            return f"end · {event.status} · {one_line(event.reason, 50)}"
        case _:
            assert_never(event)


def event_line(event: Event, width: int) -> Text:
    """A timeline row: seq, turn, summary, coloured by failure."""
    turn = "" if event.turn is None else str(event.turn)
    line = Text.assemble(
        (f"{event.seq:>6} ", "dim"),
        (f"{turn:>4} ", "dim"),
        (f"{event.type:<16}", "bold"),
        event_summary(event),
        no_wrap=True,
        overflow="ellipsis",
    )
    if event_is_failure(event):
        line.stylize("red")
    line.truncate(width, pad=True)
    return line
