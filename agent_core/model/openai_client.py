"""The real model client: any OpenAI-compatible endpoint through the official SDK, in
chat completions (the default), the Responses API or Anthropic Messages (`api`; each
format's request and answer are written and read by its codec, `agent_core.wire.codecs`).

This is the only module that imports `openai`. Every attempt is ours and visible: the SDK's
own retries are off, and each try yields `AttemptStarted`, its raw chunks, and either
`Completed` or `AttemptFailed`. Chunks are taken as the JSON dicts the server sent (the SDK
decodes the SSE stream, we ask it not to build models), so non-standard fields such as
`x_groq` or `reasoning` survive into the trace. Every format, streamed or whole, goes
through one attempt loop and its codec's assembler.

Timeouts: `timeout_s` bounds connecting and any silence between bytes (a stalled stream);
`retry.deadline_s` bounds the whole call, waits between attempts included.

Each failed attempt's message ends with the decision taken on it, in parentheses: retrying
(and when), not retried (and why: the status, or the server's `x-should-retry`), or given up.
A server's error text is kept up to `ERROR_TEXT_CHARS`, which is where it names the cause.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import openai

from agent_core.model.base import (
    ERROR_TEXT_CHARS,
    AttemptFailed,
    AttemptStarted,
    Completed,
    ModelCall,
    ModelError,
    ModelTimeout,
    RawChunk,
    StreamItem,
)
from agent_core.model.retry import (
    RetryPolicy,
    parse_retry_after,
    retriable_status,
    status_decision,
)
from agent_core.wire.answer import EmptyAnswer, WireError
from agent_core.wire.codecs import codec_for
from agent_core.wire.urls import public_url
from traces.events import ModelApi

_RETRIABLE_ERROR_TYPES = frozenset({"server_error", "overloaded_error", "rate_limit_error"})


@dataclass(frozen=True)
class _Failure:
    kind: str
    message: str
    retriable: bool
    status_code: int | None = None
    retry_after_s: float | None = None
    why: str = ""  # why it is (not) worth another try, when the kind alone does not say


class _EmptyResponse(Exception):
    pass


# The test suite sets this so that no test can reach a real model by accident: with it set,
# only endpoints on this machine (the local test servers) may be called.
LOCAL_ONLY_ENV = "WORKBENCH_LOCAL_MODELS_ONLY"


def _is_local(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class OpenAIChatModel:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        stream: bool = True,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        api: ModelApi = "chat",
    ) -> None:
        self.api = api  # the wire format of every call
        self.codec = codec_for(api)
        self.name = model
        self.model = model
        self.base_url: str | None = public_url(base_url)
        self.stream_enabled = stream  # False forces the non-streaming path (--no-stream)
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self._base_url = base_url
        # Local servers need no key, but the SDK insists on one; the placeholder is harmless.
        self._api_key = api_key or "no-key"
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def _sdk(self) -> openai.AsyncOpenAI:
        # The SDK's connection pool belongs to one event loop; tests and the CLI may use several.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = openai.AsyncOpenAI(
                base_url=self._base_url,
                api_key=self._api_key,
                max_retries=0,
                timeout=openai.Timeout(self.timeout_s, connect=min(self.timeout_s, 10.0)),
            )
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def wire_body(self, call: ModelCall) -> dict[str, Any]:
        """The request body a call goes as (a trace keeps it beside the messages)."""
        return self._body(call, call.stream and self.stream_enabled)

    def _body(self, call: ModelCall, stream: bool) -> dict[str, Any]:
        return self.codec.request_body(
            self.model, call.messages, call.tools, call.params, stream=stream, known=call.wire
        )

    async def stream(self, call: ModelCall) -> AsyncIterator[StreamItem]:
        policy = self.retry
        loop = asyncio.get_running_loop()
        deadline = loop.time() + policy.deadline_s
        streaming = call.stream and self.stream_enabled
        body = self._body(call, streaming)
        if os.environ.get(LOCAL_ONLY_ENV) and not _is_local(self._base_url):
            message = (
                f"{LOCAL_ONLY_ENV} is set: refusing to call {self.base_url}, which is not on "
                "this machine"
            )
            yield AttemptStarted(1)
            yield AttemptFailed(1, "config", message, retriable=False)
            raise ModelError("config", message)
        attempt = 0
        while True:
            attempt += 1
            yield AttemptStarted(attempt)
            try:
                # aclosing: if our consumer stops early, the HTTP stream is closed right away.
                async with aclosing(self._attempt(body, streaming, attempt, deadline)) as items:
                    async for item in items:
                        yield item
                return
            except TimeoutError:
                if loop.time() < deadline:  # a socket timeout the SDK did not wrap
                    failure = _Failure("timeout", f"no response within {self.timeout_s:g} s", True)
                else:  # our own deadline for the whole call
                    message = f"model call exceeded its {policy.deadline_s:g} s deadline"
                    yield AttemptFailed(attempt, "timeout", message, retriable=False)
                    raise ModelTimeout(message) from None
            except (openai.APIError, json.JSONDecodeError, WireError, _EmptyResponse) as exc:
                failure = self._classify(exc)
            wait_s = policy.backoff_s(attempt, failure.retry_after_s)
            decision = _decision(failure, attempt, wait_s, loop.time() + wait_s, deadline, policy)
            will_retry = decision.startswith("retrying")
            message = f"{failure.message} ({decision})"
            yield AttemptFailed(
                attempt,
                failure.kind,
                message,
                failure.retriable,
                failure.status_code,
                will_retry,
            )
            if will_retry:
                await asyncio.sleep(wait_s)
                continue
            if failure.kind == "timeout":
                raise ModelTimeout(message)
            raise ModelError(failure.kind, message, status_code=failure.status_code)

    async def _attempt(
        self, body: dict[str, Any], streaming: bool, attempt: int, deadline: float
    ) -> AsyncGenerator[StreamItem, None]:
        """One attempt, in any wire format: sent where the format's codec says, with its
        headers, and its answer read by the codec's assembler."""
        codec = self.codec
        client = self._sdk()
        headers: dict[str, Any] = dict(codec.headers(self._api_key))
        if not codec.bearer_auth:
            headers["Authorization"] = openai.Omit()
        options: Any = {"security": {"bearer_auth": True}, "headers": headers}
        path = codec.path(self._base_url)
        sent = time.monotonic()
        if not streaming:
            async with asyncio.timeout_at(deadline):
                data = await client.post(path, body=body, cast_to=object, options=options)
            if not isinstance(data, dict):
                raise _EmptyResponse(f"the answer is not a JSON object: {str(data)[:200]}")
            elapsed_ms = (time.monotonic() - sent) * 1000.0
            response = codec.whole_response(data)
            yield RawChunk(attempt, 0, elapsed_ms, data, response.content or "")
            yield Completed(attempt, response, elapsed_ms, elapsed_ms, 1)
            return
        async with asyncio.timeout_at(deadline):
            sdk_stream = await client.post(
                path,
                body=body,
                cast_to=object,
                options=options,
                stream=True,
                stream_cls=openai.AsyncStream[object],
            )
        assembler = codec.assembler()
        ttft_ms: float | None = None
        index = 0
        try:
            events = sdk_stream.__aiter__()
            # A chat stream ends with the SDK's `[DONE]`; the others at their last event.
            while not assembler.done:
                # The deadline covers only our awaits, never the consumer's time at `yield`.
                async with asyncio.timeout_at(deadline):
                    try:
                        data = await events.__anext__()
                    except StopAsyncIteration:
                        break
                elapsed_ms = (time.monotonic() - sent) * 1000.0
                if not isinstance(data, dict):
                    continue  # e.g. a bare JSON value; nothing to assemble or record
                text = assembler.add(data)
                if ttft_ms is None and assembler.saw_output:
                    ttft_ms = elapsed_ms
                yield RawChunk(attempt, index, elapsed_ms, data, text)
                index += 1
        finally:
            await sdk_stream.close()
        if index == 0:
            raise _EmptyResponse("the stream ended without a single chunk")
        latency_ms = (time.monotonic() - sent) * 1000.0
        yield Completed(attempt, assembler.response(), ttft_ms, latency_ms, index)

    def _classify(self, exc: Exception) -> _Failure:
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            headers = dict(exc.response.headers)
            detail = _error_detail(exc.body) or exc.response.reason_phrase or "error"
            retriable, why = status_decision(status, headers)
            return _Failure(
                "status",
                self._scrub(f"HTTP {status}: {detail}"),
                retriable,
                status,
                parse_retry_after(headers),
                why,
            )
        if isinstance(exc, openai.APITimeoutError):
            message = f"no response within {self.timeout_s:g} s (connect or stalled stream)"
            return _Failure("timeout", message, True)
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f"{exc.message} {cause}" if cause else exc.message
            return _Failure("connection", self._scrub(detail.strip()), True)
        if isinstance(exc, openai.APIError):
            # An error event inside a 200 stream: the status (if any) is in the payload.
            payload = exc.body if isinstance(exc.body, dict) else {}
            raw_status = payload.get("status_code", payload.get("code"))
            event_status = raw_status if isinstance(raw_status, int) else None
            retriable = (
                retriable_status(event_status) or payload.get("type") in _RETRIABLE_ERROR_TYPES
            )
            message = self._scrub(f"error event in the stream: {exc.message}")
            return _Failure("stream_error", message, retriable, event_status)
        if isinstance(exc, json.JSONDecodeError):
            return _Failure("bad_response", f"a chunk is not valid JSON: {exc.msg}", False)
        if isinstance(exc, WireError):
            # An answer with nothing in it is worth another try; a malformed one is not.
            retriable = isinstance(exc, EmptyAnswer)
            return _Failure("bad_response", self._scrub(str(exc)), retriable)
        return _Failure("bad_response", self._scrub(str(exc)), True)

    def _scrub(self, text: str) -> str:
        if self._api_key and self._api_key != "no-key":
            text = text.replace(self._api_key, "[redacted]")
        return text


def _decision(
    failure: _Failure,
    attempt: int,
    wait_s: float,
    resume_at: float,
    deadline: float,
    policy: RetryPolicy,
) -> str:
    """What happens after this failed attempt, in words; "retrying …" when it is retried."""
    if not failure.retriable:
        return f"not retried: {failure.why}" if failure.why else "not retried"
    if failure.retry_after_s is not None and failure.retry_after_s > policy.max_retry_after_s:
        return (
            f"gave up: the server asks to wait {failure.retry_after_s:g} s, over the "
            f"{policy.max_retry_after_s:g} s limit"
        )
    if attempt >= policy.max_attempts:
        return f"gave up after {attempt} attempt{'s' if attempt > 1 else ''}"
    if resume_at >= deadline:
        return (
            f"gave up after {attempt} attempt{'s' if attempt > 1 else ''}: waiting "
            f"{wait_s:.1f} s more would pass the {policy.deadline_s:g} s deadline"
        )
    return f"retrying in {wait_s:.1f} s, attempt {attempt + 1} of {policy.max_attempts}"


def _error_detail(body: object) -> str:
    """The server's own words: the error's message, else the whole body, up to the cap."""
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else error
        text = message if isinstance(message, str) and message else json.dumps(body)
    elif isinstance(body, str):
        text = body
    else:
        text = json.dumps(body) if body else ""
    return capped(text.strip())


def capped(text: str, limit: int = ERROR_TEXT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"
