"""What every wire codec makes of a model's answer: the normalized assistant message (the
chat-completions shape every reader of a trace knows) beside the answer in its own format.

A codec's stream assembler is fed each decoded event in arrival order (`add`), says when
the format's own last event has come (`done`) and gives the `WireAnswer` (`result`) or the
agent loop's `AssembledResponse` (`response`), or raises `WireError` when the events are not
an answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from agent_core.wire.chat import tool_calls
from agent_core.wire.spans import WireSpan


class WireError(ValueError):
    """Events or a body that are not an answer in the format; one line saying why, and
    what kind of failure a trace calls it (`stream_error`: the stream's own error event)."""

    def __init__(self, message: str, kind: str = "bad_response") -> None:
        super().__init__(message)
        self.kind = kind


class EmptyAnswer(WireError):
    """An answer that holds nothing of one (no choice in a chat completion): a server's
    glitch, worth another try, unlike an answer that is malformed."""


@dataclass(frozen=True)
class WireAnswer:
    message: dict[str, Any]  # the assistant message, chat-completions shape
    finish_reason: str | None  # in chat-completions words (stop, tool_calls, length, …)
    usage: dict[str, Any] | None  # prompt_tokens, completion_tokens, total_tokens
    body: dict[str, Any]  # the whole answer in its own wire format

    @property
    def content(self) -> str | None:
        text = self.message.get("content")
        return text if isinstance(text, str) and text else None


@dataclass(frozen=True)
class ToolCallPart:
    id: str
    name: str
    arguments: str  # raw argument string as the model sent it ("" when none)
    # Provider fields on the call that must be echoed back verbatim on the next request
    # (e.g. Gemini's `extra_content.google.thought_signature`).
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AssembledResponse:
    content: str | None
    tool_calls: list[ToolCallPart]
    finish_reason: str | None
    usage: dict[str, Any] | None
    reasoning: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # The answer in its own wire format, read as `to_message()` (thinking blocks and
    # reasoning items included), when the client spoke one that is not chat.
    wire: WireSpan | None = None

    def to_message(self) -> dict[str, Any]:
        """The assistant message as it is kept in history and sent back to the model.

        A message that only carries tool calls gets `"content": ""`, not null: OpenAI,
        vLLM, Ollama and LM Studio accept both, but llama-cpp-python's server rejects a
        null (its request model wants a string) and its chat templates fail on a missing
        key, while every one of them accepts the empty string.
        """
        text = "" if self.content is None and self.tool_calls else self.content
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    **call.extra,
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        return message


class WireAssembler(Protocol):
    @property
    def saw_output(self) -> bool:
        """Any text, reasoning or tool-call data yet (for the time to first token)."""

    @property
    def done(self) -> bool:
        """The format's last event came (or an error ended the answer)."""

    @property
    def answered(self) -> bool:
        """The answer is whole, though the stream may not have said it is over (a chat
        chunk with a finish reason, before the usage and `[DONE]`)."""

    @property
    def error(self) -> str | None:
        """What an error event said, when the stream carried one."""

    def add(self, event: dict[str, Any]) -> str:
        """Feed one event; returns the visible text it added."""

    def result(self) -> WireAnswer:
        """The answer in chat shape beside its own body; raises `WireError`."""

    def response(self) -> AssembledResponse:
        """The answer as the agent loop takes it, with its wire form for the next turn."""


def loop_response(
    answer: WireAnswer, span: Callable[[dict[str, Any], dict[str, Any]], WireSpan]
) -> AssembledResponse:
    """An answer of a format that is not chat as the loop takes it (read as every reader of
    chat messages reads them: a freeform call's input as its arguments text), with the answer
    as it came (`span` of the message and the body), sent back so on the next turn."""
    message = answer.message
    calls = [
        ToolCallPart(call.id, call.name, call.arguments_raw, {}) for call in tool_calls(message)
    ]
    reasoning = message.get("reasoning_content")
    response = AssembledResponse(
        content=answer.content,
        tool_calls=calls,
        finish_reason=answer.finish_reason,
        usage=answer.usage,
        reasoning=reasoning if isinstance(reasoning, str) else None,
    )
    return replace(response, wire=span(response.to_message(), answer.body))


@dataclass(frozen=True)
class ProviderCall:
    """A tool call the provider ran itself inside one answer (Anthropic's `server_tool_use`
    and `mcp_tool_use` blocks, the Responses API's hosted tool items): no client runs it, so
    it is no tool call of the chat-shape message; its result, when the answer holds one."""

    id: str
    name: str
    arguments_raw: str
    result: str | None  # None: the answer holds no result for it
    error: str | None = None


def result_text(content: Any) -> str:
    """A provider tool's result as text: text parts as they are, search hits as their
    title and address, anything else as its JSON."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    lines: list[str] = []
    for part in parts:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            lines.append(part["text"])
        elif isinstance(part, dict) and isinstance(part.get("url"), str):
            lines.append(f"{part.get('title') or ''} <{part['url']}>".strip())
        elif part is not None:
            lines.append(json.dumps(part, ensure_ascii=False, sort_keys=True))
    return "\n".join(lines)


def assistant_message(
    text: str | None, calls: list[dict[str, Any]], reasoning: str | None
) -> dict[str, Any]:
    """The chat-shape assistant message: as the agent keeps it (tool calls with `""`)."""
    message: dict[str, Any] = {"role": "assistant", "content": text or ("" if calls else None)}
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning_content"] = reasoning
    return message


def function_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """One chat-shape tool call; arguments given as an object are written as their JSON."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def custom_call(call_id: str, name: str, text: Any) -> dict[str, Any]:
    """A call of a freeform tool (the Responses API's `custom` tools, such as Codex's
    `apply_patch`): its input is text, not JSON arguments. Chat completions write it so."""
    return {"id": call_id, "type": "custom", "custom": {"name": name, "input": str(text or "")}}


def chat_tool(name: Any, description: Any, parameters: Any, **extra: Any) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if description is not None:
        function["description"] = description
    function["parameters"] = parameters if parameters is not None else {"type": "object"}
    function.update({k: v for k, v in extra.items() if v is not None})
    return {"type": "function", "function": function}


def usage(prompt: Any, completion: Any, total: Any = None) -> dict[str, Any] | None:
    """Usage in chat words, from counts that may be missing."""
    counts = [
        c if isinstance(c, int) and not isinstance(c, bool) else None
        for c in (prompt, completion, total)
    ]
    if all(c is None for c in counts):
        return None
    prompt_n, completion_n, total_n = counts
    if total_n is None and prompt_n is not None and completion_n is not None:
        total_n = prompt_n + completion_n
    out = {"prompt_tokens": prompt_n, "completion_tokens": completion_n, "total_tokens": total_n}
    return {k: v for k, v in out.items() if v is not None}


def all_text(content: Any, kinds: frozenset[str]) -> bool:
    """Whether every part of a content list is a text part of one of `kinds`."""
    return isinstance(content, list) and all(
        isinstance(part, dict) and part.get("type") in kinds and isinstance(part.get("text"), str)
        for part in content
    )
