"""Chat-completions message shapes: a message's content as text, an assistant message's
tool calls with their arguments parsed.

Everything that reads chat messages (the agent loop, the capture proxy, regression
judging, the decision-chain diff, the OpenTelemetry mapping) takes tool calls from here, so
one argument string means the same everywhere: `{"path": "README.md",}` is the object the
loop repairs it to and runs the tool with, in every trace and every verdict.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agent_core.wire.arguments import parse_arguments


@dataclass(frozen=True)
class ChatToolCall:
    """One entry of an assistant message's `tool_calls`, as the loop would run it."""

    id: str
    name: str
    arguments_raw: str  # the argument string as sent
    arguments: dict[str, Any] | None  # parsed (or repaired); None when unusable
    parse_error: str | None  # short and model-readable, when arguments is None


def arguments_text(value: Any) -> str:
    """Arguments as the wire's string: a string as is, none as "", and anything else (a
    client or an exporter that sent the object itself) as its JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def tool_call(call: Any) -> ChatToolCall:
    """A tool call as it comes in a message (`{"id", "function": {"name", "arguments"}}`).
    A freeform tool's call (`{"type": "custom", "custom": {"name", "input"}}`) takes its
    input text as it is: its raw arguments, and `{"input": text}` parsed."""
    call = call if isinstance(call, dict) else {}
    custom = call.get("custom")
    if call.get("type") == "custom" and isinstance(custom, dict):
        text = arguments_text(custom.get("input"))
        return ChatToolCall(
            id=str(call.get("id") or ""),
            name=str(custom.get("name") or ""),
            arguments_raw=text,
            arguments={"input": text},
            parse_error=None,
        )
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    raw = arguments_text(function.get("arguments"))
    parsed = parse_arguments(raw)
    return ChatToolCall(
        id=str(call.get("id") or ""),
        name=str(function.get("name") or ""),
        arguments_raw=raw,
        arguments=parsed.value,
        parse_error=parsed.error,
    )


def tool_calls(message: Any) -> list[ChatToolCall]:
    """The tool calls an assistant message asks for, in order."""
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    return [tool_call(call) for call in calls or ()]


# Tools whose call is the agent's answer: the client ends its run on them and sends nothing
# back (smolagents offers `final_answer` to every agent and stops when the model calls it).
FINAL_ANSWER_TOOLS = frozenset({"final_answer"})


def final_answer(calls: list[Any]) -> str | None:
    """The answer, when every one of `calls` (chat-shape tool calls) is to a final-answer
    tool: the `answer` argument (its JSON when it is not text), else the raw arguments."""
    parsed = [tool_call(call) for call in calls]
    if not parsed or any(call.name not in FINAL_ANSWER_TOOLS for call in parsed):
        return None
    last = parsed[-1]
    value = (last.arguments or {}).get("answer", last.arguments_raw)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def text_of(content: Any) -> str:
    """Text of a content value: a string as is, the `text` of its parts joined (parts
    without text, such as images, say nothing); anything else ""."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def content_text(content: Any) -> str:
    """A message's content as plain text (`text_of`), none as "" and any other value as its
    JSON, so that nothing a message held is shown as empty."""
    if content is None or isinstance(content, str | list):
        return text_of(content)
    return json.dumps(content, ensure_ascii=False)


# Context a coding agent wraps in a tag of its own and sends as (part of) a user message:
# Claude Code's `<system-reminder>` blocks, Codex's `<environment_context>` and
# `<user_instructions>`. A tag name with `-` or `_` in it, so a user's `<doc>…</doc>` is text.
_FRAMING = re.compile(r"\s*<([a-z]+[-_][a-z_-]+)\b[^>]*>.*?</\1>\s*", re.DOTALL)


def without_framing(text: str) -> str:
    """`text` without the framing blocks a client put before it."""
    while match := _FRAMING.match(text):
        text = text[match.end() :]
    return text


def task_text(messages: list[Any]) -> str | None:
    """What a conversation asks: the first user message's text without the client's framing;
    a user message that is framing only is skipped (then the first user text as it is)."""
    first: str | None = None
    for message in messages:
        if not (isinstance(message, dict) and message.get("role") == "user"):
            continue
        text = content_text(message.get("content"))
        first = text if first is None else first
        if stripped := without_framing(text).strip():
            return stripped
    return first
