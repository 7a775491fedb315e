"""The agent's model calls in the two wire formats that are not chat completions (`run
--api responses|anthropic`): the request written by the format's codec (agent_core.wire),
and its answer, streamed or whole, read back into the `AssembledResponse` the loop takes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agent_core.model.base import AssembledResponse, ModelCall, ToolCallPart
from agent_core.wire import anthropic, responses
from agent_core.wire.answer import WireAnswer, WireAssembler
from agent_core.wire.chat import tool_calls
from agent_core.wire.spans import WireSpan
from traces.events import ModelApi

ANTHROPIC_VERSION = "2023-06-01"


def wire_body(api: ModelApi, model: str, call: ModelCall, *, stream: bool) -> dict[str, Any]:
    write = responses.request_body if api == "responses" else anthropic.request_body
    return write(model, call.messages, call.tools, call.params, stream=stream, known=call.wire)


def wire_spans(api: ModelApi, body: dict[str, Any] | None) -> list[WireSpan]:
    """A recorded request body's conversation in its wire format, each span with the chat
    messages it reads as (none for chat, whose messages are the body's)."""
    if body is None or api == "chat":
        return []
    return responses.spans(body) if api == "responses" else anthropic.spans(body)


def wire_path(api: ModelApi, base_url: str) -> str:
    """Where the call goes under the client's base URL: Anthropic's base URL has no `/v1`."""
    if api == "responses":
        return "/responses"
    return "/messages" if base_url.rstrip("/").endswith("/v1") else "/v1/messages"


def wire_headers(api: ModelApi, api_key: str) -> dict[str, str]:
    return (
        {"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION} if api == "anthropic" else {}
    )


class WireDecoder:
    """A stream of the format's events (or one whole answer) read into the loop's terms."""

    def __init__(self, api: ModelApi) -> None:
        self.api = api
        self.assembler: WireAssembler = (
            responses.ResponsesAssembler() if api == "responses" else anthropic.AnthropicAssembler()
        )

    def add(self, event: dict[str, Any]) -> str:
        """Feed one event; returns the visible text it added."""
        self.assembler.add(event)
        kind = event.get("type")
        if kind == "response.output_text.delta":
            return str(event.get("delta") or "")
        delta = event.get("delta")
        if (
            kind == "content_block_delta"
            and isinstance(delta, dict)
            and delta.get("type") == "text_delta"
        ):
            return str(delta.get("text") or "")
        return ""

    def result(self) -> AssembledResponse:
        return self._kept(self.assembler.result())

    def whole(self, body: dict[str, Any]) -> AssembledResponse:
        if self.api == "responses":
            return self._kept(responses.answer_from_body(body))
        return self._kept(anthropic.answer_from_body(body))

    def _kept(self, answer: WireAnswer) -> AssembledResponse:
        """The answer read, and as it came: sent back so on the next turn."""
        response = assembled(answer)
        span = responses.answer_span if self.api == "responses" else anthropic.answer_span
        return replace(response, wire=span(response.to_message(), answer.body))


def assembled(answer: WireAnswer) -> AssembledResponse:
    message = answer.message
    # Read as every reader of chat messages reads them (a freeform call's input as its
    # arguments text).
    calls = [
        ToolCallPart(call.id, call.name, call.arguments_raw, {}) for call in tool_calls(message)
    ]
    reasoning = message.get("reasoning_content")
    return AssembledResponse(
        content=answer.content,
        tool_calls=calls,
        finish_reason=answer.finish_reason,
        usage=answer.usage,
        reasoning=reasoning if isinstance(reasoning, str) else None,
    )
