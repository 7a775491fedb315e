"""The three wire formats the proxy records and serve-model answers, side by side.

Which format a path speaks (`API_PATHS`), and for each format: a request read into
chat-shape messages, tools and parameters; a stream assembler; a whole answer read; and an
answer written whole or as a stream, or as an error in the shape its clients read. The
Responses API and Anthropic Messages come from their codecs in `agent_core.wire`; chat
completions from the agent's own assembler, so a captured chat answer is read exactly as the
agent loop reads it.
"""

from __future__ import annotations

from typing import Any

from agent_core.model.assembler import MalformedChunk, StreamAssembler, chunk_from_completion
from agent_core.wire import anthropic, responses
from agent_core.wire.answer import ProviderCall, WireAnswer, WireAssembler, WireError
from traces.events import ModelApi
from workbench.engine.recording.same_request import body_parts

API_PATHS: dict[str, ModelApi] = {
    "/v1/chat/completions": "chat",
    "/chat/completions": "chat",
    "/v1/responses": "responses",
    "/responses": "responses",
    "/v1/messages": "anthropic",
    "/messages": "anthropic",
}


class ChatAssembler:
    """The agent's chat-completion assembler behind the codecs' assembler interface. A chat
    stream says it is over with `data: [DONE]`, which the SSE decoder sees, not here."""

    def __init__(self) -> None:
        self._inner = StreamAssembler()
        self.done = False
        self.error: str | None = None

    @property
    def saw_output(self) -> bool:
        return self._inner.saw_output

    @property
    def saw_finish(self) -> bool:
        return self._inner.finish_reason is not None

    def add(self, event: dict[str, Any]) -> None:
        try:
            self._inner.add(event)
        except MalformedChunk as exc:
            self.error = self.error or str(exc)

    def result(self) -> WireAnswer:
        if self.error is not None:
            raise WireError(self.error)
        if not self._inner.saw_choice:
            raise WireError("no chunk of the answer carried a choice")
        response = self._inner.result()
        return WireAnswer(response.to_message(), response.finish_reason, response.usage, {})


def assembler(api: ModelApi) -> WireAssembler:
    if api == "responses":
        return responses.ResponsesAssembler()
    if api == "anthropic":
        return anthropic.AnthropicAssembler()
    return ChatAssembler()


def request_parts(
    api: ModelApi, body: dict[str, Any]
) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """A request's messages and tools in chat shape, and its other parameters."""
    if api == "responses":
        return responses.request_parts(body)
    if api == "anthropic":
        return anthropic.request_parts(body)
    return body_parts(body)


def chat_body(api: ModelApi, body: dict[str, Any]) -> dict[str, Any]:
    """A request of any format as the chat-completion request that says the same, for
    responders that read chat: `body_parts` of it gives back `request_parts` of `body`."""
    if api == "chat":
        return body
    messages, tools, params = request_parts(api, body)
    chat: dict[str, Any] = {**params, "model": body.get("model"), "messages": messages}
    if tools:
        chat["tools"] = tools
    chat["stream"] = bool(body.get("stream"))
    return chat


def answer_from_body(api: ModelApi, body: Any) -> WireAnswer:
    """A whole (non-streamed) answer; raises WireError when it is not one of `api`."""
    if not isinstance(body, dict):
        raise WireError("the answer is not a JSON object")
    if api == "responses":
        return responses.answer_from_body(body)
    if api == "anthropic":
        return anthropic.answer_from_body(body)
    chat = ChatAssembler()
    try:
        chat.add(chunk_from_completion(body))
    except MalformedChunk as exc:
        raise WireError(str(exc)) from None
    answer = chat.result()
    return WireAnswer(answer.message, answer.finish_reason, answer.usage, body)


def provider_calls(api: ModelApi, body: dict[str, Any]) -> list[ProviderCall]:
    """The tool calls the provider ran itself within a whole answer (none in chat)."""
    if api == "responses":
        return responses.provider_calls(body)
    if api == "anthropic":
        return anthropic.provider_calls(body)
    return []


def answer_from_events(api: ModelApi, events: list[dict[str, Any]]) -> WireAnswer:
    assembling = assembler(api)
    for event in events:
        assembling.add(event)
    return assembling.result()


def whole_body(api: ModelApi, answer: WireAnswer, *, model: str, answer_id: str) -> dict[str, Any]:
    """`answer` written whole in `api`'s format (its own body when it is of that format)."""
    if api == "responses":
        return responses.whole_body(
            answer.message, answer.finish_reason, answer.usage, model=model, response_id=answer_id
        )
    if api == "anthropic":
        return anthropic.whole_body(
            answer.message, answer.finish_reason, answer.usage, model=model, response_id=answer_id
        )
    body: dict[str, Any] = {
        "id": answer_id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": answer.message, "finish_reason": answer.finish_reason}],
    }
    if answer.usage is not None:
        body["usage"] = answer.usage
    return body


def stream_events(api: ModelApi, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream of a whole answer of `api`'s format (chat: one chunk with all of it)."""
    if api == "responses":
        return responses.stream_events(body)
    if api == "anthropic":
        return anthropic.stream_events(body)
    chunk = chunk_from_completion(body)
    chunk["object"] = "chat.completion.chunk"
    return [chunk]


def error_body(api: ModelApi, status: int, message: str, kind: str, **extra: Any) -> dict[str, Any]:
    """An error answer in the shape `api`'s clients read."""
    if api == "anthropic":
        return anthropic.error_body(status, message, **extra)
    return responses.error_body(message, kind, **extra)


def error_message(body: Any) -> str | None:
    """The message of an error answer of any format (`error.message`)."""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else None
