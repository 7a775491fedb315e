"""Agents that send their tool calls and results back as text, read as the tool calls they are.

smolagents' ToolCallingAgent gets tool calls from the model as usual, but keeps them in its
memory as text and sends them back so: the assistant's turn as `Calling tools:\\n[{'id': …,
'type': 'function', 'function': {'name': …, 'arguments': {…}}}]` (a Python list's repr,
after any text the model wrote), and the results as a user message `Observation:\\n…` (or
`Call id: …\\nError:\\n…` when the step failed). Read as they are, each request would be a
new conversation and every call a call without a result. `tool_messages` reads them as an
assistant message with those tool calls and one `tool` message per call, so the capture
continues the run, links each result to its call, and a fork can mock it. Several calls in
one step share one observation (smolagents joins their outputs): each gets all of it.
"""

from __future__ import annotations

import ast
from typing import Any

from agent_core.wire.answer import function_call
from agent_core.wire.chat import content_text

CALLING = "Calling tools:\n"
OBSERVATION = "Observation:\n"
ERROR = "Error:\n"


def tool_messages(messages: list[Any]) -> list[Any] | None:
    """`messages` with text-spelled tool calls and results read as tool calls and `tool`
    messages; None when there are none."""
    out: list[Any] = []
    pending: list[dict[str, Any]] = []  # the calls of the last text-spelled assistant turn
    changed = False
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        text = content_text(message.get("content")) if role in ("assistant", "user") else ""
        calls = (
            _spelled_calls(text) if role == "assistant" and not message.get("tool_calls") else None
        )
        if calls is not None:
            before = text[: text.index(CALLING)].strip()
            out.append({"role": "assistant", "content": before, "tool_calls": calls})
            pending, changed = calls, True
            continue
        result = _observation(text) if role == "user" and pending else None
        if result is not None:
            out += [
                {"role": "tool", "tool_call_id": call["id"], "content": result} for call in pending
            ]
            pending = []
            continue
        pending = []
        out.append(message)
    return out if changed else None


def _spelled_calls(text: str) -> list[dict[str, Any]] | None:
    """The tool calls an assistant's text spells after `Calling tools:`, or None."""
    at = text.find(CALLING)
    if at < 0:
        return None
    try:
        value = ast.literal_eval(text[at + len(CALLING) :].strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, list) or not value:
        return None
    calls: list[dict[str, Any]] = []
    for item in value:
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict) or not isinstance(item.get("id"), str):
            return None
        calls.append(
            function_call(item["id"], str(function.get("name") or ""), function.get("arguments"))
        )
    return calls


def _observation(text: str) -> str | None:
    """The result a user message carries for the calls before it, or None."""
    if text.startswith(OBSERVATION):
        return text[len(OBSERVATION) :]
    if text.startswith("Call id: ") and ERROR in text:
        return text[text.index(ERROR) :]
    return None
