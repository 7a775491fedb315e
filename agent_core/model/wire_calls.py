"""The agent's model calls in the two wire formats that are not chat completions (`run
--api responses|anthropic`): the request written by the format's codec (agent_core.wire),
and its answer, streamed or whole, read back into the `AssembledResponse` the loop takes.
"""

from __future__ import annotations

from typing import Any

from agent_core.model.base import AssembledResponse, ModelCall, ToolCallPart
from agent_core.wire import anthropic, responses
from agent_core.wire.answer import WireAnswer, WireAssembler
from agent_core.wire.chat import tool_calls
from traces.events import ModelApi

ANTHROPIC_VERSION = "2023-06-01"


def wire_body(api: ModelApi, model: str, call: ModelCall, *, stream: bool) -> dict[str, Any]:
    if api == "responses":
        return responses.request_body(model, call.messages, call.tools, call.params, stream=stream)
    return anthropic.request_body(model, call.messages, call.tools, call.params, stream=stream)


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
        return assembled(self.assembler.result())

    def whole(self, body: dict[str, Any]) -> AssembledResponse:
        if self.api == "responses":
            return assembled(responses.answer_from_body(body))
        return assembled(anthropic.answer_from_body(body))


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
