"""Chat messages as the loop keeps them, and the invariant checked before every request.

Assistant messages with tool calls are kept as the model sent them, except that one without
text carries `"content": ""` (several servers reject null). Every tool call
gets exactly one tool message carrying the model's own id, placed after its assistant message
and before the next assistant message. A violation is a bug in the loop or in a fork's
rebuilt history, so the run stops with an `error` rather than sending a malformed request.
"""

from __future__ import annotations

from typing import Any


class MessageInvariantError(Exception):
    pass


def system_message(text: str) -> dict[str, Any]:
    return {"role": "system", "content": text}


def user_message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def tool_message(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def calls_without_text(message: dict[str, Any]) -> bool:
    """An assistant message with tool calls and no text (null, absent or "")."""
    return (
        message.get("role") == "assistant"
        and bool(message.get("tool_calls"))
        and message.get("content") in (None, "")
    )


def sendable(message: dict[str, Any]) -> dict[str, Any]:
    """The message as servers accept it: an assistant tool-call message without text gets
    `"content": ""` (histories rebuilt from older recordings carry null, or no key)."""
    if calls_without_text(message):
        return {**message, "content": ""}
    return dict(message)


def check_messages(messages: list[dict[str, Any]]) -> None:
    """Raise `MessageInvariantError` naming the first problem found."""
    open_calls: dict[str, int] = {}  # call id -> index of its assistant message
    answered: set[str] = set()
    for position, message in enumerate(messages):
        role = message.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            raise MessageInvariantError(f"message {position} has unknown role {role!r}")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not call_id:
                raise MessageInvariantError(f"tool message {position} has no tool_call_id")
            if call_id in answered:
                raise MessageInvariantError(f"tool call {call_id} answered more than once")
            if call_id not in open_calls:
                raise MessageInvariantError(
                    f"tool message {position} answers unknown or closed call {call_id}"
                )
            del open_calls[call_id]
            answered.add(call_id)
            continue
        if open_calls:
            missing = ", ".join(sorted(open_calls))
            raise MessageInvariantError(
                f"message {position} ({role}) comes before the results of tool calls {missing}"
            )
        if role == "assistant":
            for call in message.get("tool_calls") or ():
                call_id = call.get("id")
                if not call_id:
                    raise MessageInvariantError(
                        f"assistant message {position} has a call with no id"
                    )
                if call_id in open_calls or call_id in answered:
                    raise MessageInvariantError(f"tool call id {call_id} is used twice")
                open_calls[call_id] = position
    if open_calls:
        raise MessageInvariantError("tool calls without results: " + ", ".join(sorted(open_calls)))
