"""One codec per wire format behind one protocol, chosen from one table (`CODECS`).

Everything that speaks a model's wire format — the agent's own model client, the capture
proxy, serve-model, replay and fork — asks `codec_for(api)` and calls the codec; no caller
branches on the format's name. A new format is a new codec (a module beside `responses`
and `anthropic` with its reading and writing, and a class here) and one table entry.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from agent_core.wire import anthropic, chat_completions, responses
from agent_core.wire.answer import (
    AssembledResponse,
    ProviderCall,
    WireAnswer,
    WireAssembler,
    loop_response,
)
from agent_core.wire.chat_completions import whole_assembler
from agent_core.wire.spans import WireSpan
from traces.events import ModelApi

Parts = tuple[list[Any], list[Any], dict[str, Any]]

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"


class WireCodec(Protocol):
    """A wire format: where a call goes and with which headers, its request body written
    from a model call and read back into chat-shape parts, its answer assembled from a
    stream or read whole, and written whole, as a stream or as an error."""

    api: ModelApi
    paths: tuple[str, ...]  # the request paths a server takes the format at
    vendor: Literal["openai", "anthropic"]  # whose service: its keys, its upstream
    # Where a client's base URL and key come from when none is given: the first of
    # `<PREFIX>_BASE_URL` (and `<PREFIX>_API_KEY`) set, else the vendor's own URL.
    env_prefixes: tuple[str, ...]
    default_base_url: str
    bearer_auth: bool  # the key goes as `Authorization: Bearer` (else in `headers`)
    keeps_body: bool  # a trace keeps the request body beside its messages
    named_events: bool  # SSE events carry their type as an `event:` line
    done_line: bool  # a stream ends with `data: [DONE]`
    last_event: re.Pattern[bytes]  # the bytes of a stream's last event
    # Bytes one of which every match of `last_event` holds, at most LAST_EVENT_LEAD bytes
    # into it: a search need not read a piece without them (most pieces), nor the part of
    # one before them.
    last_event_marks: tuple[bytes, ...]
    answer_noun: str  # what one whole answer is called, for messages
    answer_id_prefix: str
    # A request may name an earlier answer (and its items) that the server remembers,
    # and send only what followed it.
    chains_answers: bool
    # Its clients may spell tool calls and results as text (smolagents' chat agents).
    text_tool_clients: bool
    output_cap: str  # the request parameter that caps an answer's tokens

    def path(self, base_url: str) -> str:
        """Where a call goes under a client's base URL."""

    def headers(self, api_key: str) -> dict[str, str]: ...

    def request_body(
        self,
        model: str,
        messages: list[Any],
        tools: list[Any],
        params: dict[str, Any],
        *,
        stream: bool,
        known: Sequence[WireSpan] = (),
    ) -> dict[str, Any]:
        """The request for chat-shape messages, tools and parameters; messages a `known`
        span reads as go as that span's items, exactly as they were."""

    def request_parts(self, body: dict[str, Any]) -> Parts:
        """A request's messages and tools in chat shape, and its other parameters."""

    def spans(self, body: dict[str, Any]) -> list[WireSpan]:
        """A request's conversation in its own form, each span with the messages it reads
        as (none when the body's messages are the chat messages)."""

    def previous_answer_id(self, body: dict[str, Any]) -> str | None:
        """The earlier answer a request continues, when it sends only what followed it."""

    def assembler(self) -> WireAssembler: ...

    def whole_response(self, body: dict[str, Any]) -> AssembledResponse:
        """A whole (non-streamed) answer as the agent loop takes it."""

    def answer_from_body(self, body: dict[str, Any]) -> WireAnswer:
        """A whole answer; raises WireError when it is not one of this format."""

    def is_whole(self, data: dict[str, Any]) -> bool:
        """Whether a recorded chunk is a whole answer, not one of a stream's events."""

    def whole_body(
        self,
        message: dict[str, Any],
        finish_reason: str | None,
        counts: dict[str, Any] | None,
        *,
        model: str,
        response_id: str,
    ) -> dict[str, Any]:
        """A whole answer in this format with a chat-shape assistant message."""

    def stream_events(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The stream of a whole answer of this format."""

    def error_body(self, status: int, message: str, kind: str, **extra: Any) -> dict[str, Any]:
        """An error answer in the shape this format's clients read."""

    def error_reply(self, status: int, body: Any) -> Any:
        """An error body a responder wrote (in the chat shape) as this format's clients
        read it."""

    def provider_calls(self, body: dict[str, Any]) -> list[ProviderCall]:
        """The tool calls the provider ran itself within a whole answer."""


class _OpenAICodec:
    """What OpenAI's two formats share: the vendor's URL and keys, a bearer token, and one
    shape of error (Responses' `{"error": {...}}`, which chat clients read too)."""

    vendor: Literal["openai", "anthropic"] = "openai"
    env_prefixes: tuple[str, ...] = ("OPENAI",)
    default_base_url = OPENAI_BASE_URL
    bearer_auth = True

    def headers(self, api_key: str) -> dict[str, str]:
        return {}

    def error_body(self, status: int, message: str, kind: str, **extra: Any) -> dict[str, Any]:
        return responses.error_body(message, kind, **extra)

    def error_reply(self, status: int, body: Any) -> Any:
        return body


class ChatCodec(_OpenAICodec):
    api: ModelApi = "chat"
    paths: tuple[str, ...] = ("/v1/chat/completions", "/chat/completions")
    keeps_body = False  # the messages are the body
    named_events = False
    done_line = True
    # `data: [DONE]` (also `data:[DONE]`) on a line of its own.
    last_event = re.compile(rb"(?:^|[\r\n])data: ?\[DONE\]")
    last_event_marks: tuple[bytes, ...] = (b"[DONE]",)
    answer_noun = "a chat completion"
    output_cap = "max_tokens"
    answer_id_prefix = "chatcmpl"
    chains_answers = False
    text_tool_clients = True

    request_body = staticmethod(chat_completions.request_body)
    request_parts = staticmethod(chat_completions.request_parts)
    spans = staticmethod(chat_completions.spans)
    assembler = chat_completions.ChatAssembler
    answer_from_body = staticmethod(chat_completions.answer_from_body)
    is_whole = staticmethod(chat_completions.is_completion)
    whole_body = staticmethod(chat_completions.whole_body)
    stream_events = staticmethod(chat_completions.stream_events)
    provider_calls = staticmethod(chat_completions.provider_calls)

    def path(self, base_url: str) -> str:
        return "/chat/completions"

    def previous_answer_id(self, body: dict[str, Any]) -> str | None:
        return None

    def whole_response(self, body: dict[str, Any]) -> AssembledResponse:
        return whole_assembler(body).response()


class ResponsesCodec(_OpenAICodec):
    api: ModelApi = "responses"
    paths: tuple[str, ...] = ("/v1/responses", "/responses")
    keeps_body = True
    named_events = True
    done_line = False
    last_event = re.compile(rb'response\.(?:completed|incomplete|failed)\b|"type": ?"error"')
    last_event_marks: tuple[bytes, ...] = (b"completed", b"incomplete", b"failed", b'"error"')
    output_cap = "max_output_tokens"
    answer_noun = "a response"
    answer_id_prefix = "resp"
    chains_answers = True
    text_tool_clients = False

    request_body = staticmethod(responses.request_body)
    request_parts = staticmethod(responses.request_parts)
    spans = staticmethod(responses.spans)
    assembler = responses.ResponsesAssembler
    answer_from_body = staticmethod(responses.answer_from_body)
    whole_body = staticmethod(responses.whole_body)
    stream_events = staticmethod(responses.stream_events)
    provider_calls = staticmethod(responses.provider_calls)

    def path(self, base_url: str) -> str:
        return "/responses"

    def previous_answer_id(self, body: dict[str, Any]) -> str | None:
        named = body.get("previous_response_id")
        return named if isinstance(named, str) and named else None

    def whole_response(self, body: dict[str, Any]) -> AssembledResponse:
        return loop_response(responses.answer_from_body(body), responses.answer_span)

    def is_whole(self, data: dict[str, Any]) -> bool:
        return "type" not in data  # every event of a stream names its type


ANTHROPIC_VERSION = "2023-06-01"


class AnthropicCodec:
    api: ModelApi = "anthropic"
    paths: tuple[str, ...] = ("/v1/messages", "/messages")
    vendor: Literal["openai", "anthropic"] = "anthropic"
    env_prefixes: tuple[str, ...] = ("ANTHROPIC", "OPENAI")
    default_base_url = ANTHROPIC_BASE_URL
    bearer_auth = False  # its key goes as `x-api-key`, never as a bearer token
    output_cap = "max_tokens"
    keeps_body = True
    named_events = True  # Anthropic's SDK reads an event by its name
    done_line = False
    last_event = re.compile(rb'\bmessage_stop\b|"type": ?"error"')
    last_event_marks: tuple[bytes, ...] = (b"message_stop", b'"error"')
    answer_noun = "a message"
    answer_id_prefix = "msg"
    chains_answers = False
    text_tool_clients = False

    request_body = staticmethod(anthropic.request_body)
    request_parts = staticmethod(anthropic.request_parts)
    spans = staticmethod(anthropic.spans)
    assembler = anthropic.AnthropicAssembler
    whole_body = staticmethod(anthropic.whole_body)
    stream_events = staticmethod(anthropic.stream_events)
    provider_calls = staticmethod(anthropic.provider_calls)

    def path(self, base_url: str) -> str:
        # Anthropic's base URL has no `/v1`; a client given one that has it is served too.
        return "/messages" if base_url.rstrip("/").endswith("/v1") else "/v1/messages"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION}

    def previous_answer_id(self, body: dict[str, Any]) -> str | None:
        return None

    def whole_response(self, body: dict[str, Any]) -> AssembledResponse:
        return loop_response(anthropic.answer_from_body(body), anthropic.answer_span)

    def answer_from_body(self, body: dict[str, Any]) -> WireAnswer:
        return anthropic.answer_from_body(body)

    def is_whole(self, data: dict[str, Any]) -> bool:
        return data.get("type") == "message"

    def error_body(self, status: int, message: str, kind: str, **extra: Any) -> dict[str, Any]:
        return anthropic.error_body(status, message, **extra)

    def error_reply(self, status: int, body: Any) -> Any:
        if not isinstance(body, dict) or "type" in body:
            return body  # already an Anthropic error (or nothing to read)
        error = body.get("error")
        error = dict(error) if isinstance(error, dict) else {"message": str(body)}
        message = str(error.pop("message", ""))
        error.pop("type", None)  # Anthropic's type comes from the status
        return anthropic.error_body(status, message, **error)


CODECS: dict[ModelApi, WireCodec] = {
    codec.api: codec for codec in (ChatCodec(), ResponsesCodec(), AnthropicCodec())
}

# Which format a request path speaks, for servers that take all of them.
API_PATHS: dict[str, ModelApi] = {
    path: codec.api for codec in CODECS.values() for path in codec.paths
}


def codec_for(api: ModelApi) -> WireCodec:
    return CODECS[api]


# How far into a match of a codec's `last_event` its marks may begin.
LAST_EVENT_LEAD = 16


def holds_last_event(codec: WireCodec, data: bytes) -> bool:
    """Whether `data`, stream bytes, hold the format's last event (`last_event`), searched
    only from just before the first of its marks: a regular expression that begins with an
    alternation reads every byte (half a millisecond for a piece of 60 chat chunks)."""
    found = [at for mark in codec.last_event_marks if (at := data.find(mark)) >= 0]
    if not found:
        return False
    return codec.last_event.search(data, max(0, min(found) - LAST_EVENT_LEAD)) is not None


def api_named(name: str | None) -> ModelApi:
    """The format a name given by a user or a trace names; chat completions for none."""
    return next((api for api in CODECS if api == name), "chat")


def chat_request(api: ModelApi, body: dict[str, Any]) -> dict[str, Any]:
    """A request of any format as the chat-completion request that says the same (a chat
    request itself), for responders that read chat: its chat reading is the format's."""
    if api == "chat":
        return body
    messages, tools, params = codec_for(api).request_parts(body)
    chat: dict[str, Any] = {**params, "model": body.get("model"), "messages": messages}
    if tools:
        chat["tools"] = tools
    chat["stream"] = bool(body.get("stream"))
    return chat
