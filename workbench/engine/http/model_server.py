"""A real model HTTP server, for tests and `workbench serve-model`.

It speaks the three wire formats — `/v1/chat/completions`, `/v1/responses` and Anthropic's
`/v1/messages` (SSE when the reply has chunks, JSON otherwise) — and `/v1/models`. What each
request gets back is decided by a responder, `responder(body) -> Reply`: chunks to stream
(dicts, or raw SSE lines written verbatim so captured streams replay byte-faithfully), a
JSON body, an error status with headers, a stall, or a connection that drops mid-stream. The
responder reads chat: a request of another format reaches it as the chat request that says
the same (`wire.codecs.chat_request`), and its reply, whatever format it is in (`Reply.api`),
goes back in the request's own format, streamed or whole as asked, errors in the shape the
client reads. `wire_responders` answer a format's raw requests in that format instead (a
test upstream replaying recorded events). With `keep_requests` (the default, for tests)
every request received is kept in `server.requests`; `serve-model` keeps none.

    with ModelServer(ScriptResponder(steps)) as server:
        model = OpenAIChatModel(server.base_url, "key", "scripted")

Built on aiohttp (`workbench.engine.http.server`): hundreds of concurrent streams, a request
size limit answered with 413, and 400 for bodies that are not a JSON object.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from aiohttp import web

from agent_core.model.base import ModelCall
from agent_core.model.script import (
    Script,
    ScriptExhaustedError,
    ScriptStep,
    error_body,
    load_script,
    step_chunks,
    step_completion,
    used_call_ids,
)
from agent_core.wire.answer import WireAnswer, WireError
from agent_core.wire.codecs import API_PATHS, chat_request, codec_for
from traces.events import ModelApi
from workbench.engine.http.server import (
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_READ_TIMEOUT_S,
    HttpServer,
    HttpService,
    RequestProblem,
    read_json_object,
)

MODELS_PATHS = ("/v1/models", "/models")


@dataclass
class Reply:
    """What the server sends for one request.

    `chunks` set: a 200 `text/event-stream` (dicts become `data: <json>` events, strings are
    raw SSE lines written as they are). Otherwise `body` is sent as JSON with `status`.
    `stall_after=N` goes silent after N chunks (for a JSON reply: before anything) until the
    client gives up or the server closes; `drop_after=N` closes the connection there instead.
    """

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[dict[str, Any] | str] | None = None
    body: Any = None
    done: bool = False  # end the stream with `data: [DONE]`
    data_prefix: str = "data: "  # "data:" reproduces servers that omit the space
    delay_s: float = 0.0  # before the first byte
    chunk_delay_s: float = 0.0
    stall_after: int | None = None
    drop_after: int | None = None
    api: ModelApi = "chat"  # the wire format `chunks` or `body` are in


Responder: TypeAlias = Callable[[dict[str, Any]], Reply]


@dataclass(frozen=True)
class ReceivedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any


class _Dropped(Exception):
    """The reply ends by closing the connection."""


def _sse_bytes(chunk: dict[str, Any] | str, data_prefix: str, api: ModelApi = "chat") -> bytes:
    if isinstance(chunk, str):
        # Raw lines (comments, `event:` fields, `data: [DONE]`) go out verbatim; a data line
        # also ends its event.
        return (chunk + ("\n\n" if chunk.startswith("data") else "\n")).encode()
    data = f"{data_prefix}{json.dumps(chunk, ensure_ascii=False)}\n\n"
    if codec_for(api).named_events and isinstance(chunk.get("type"), str):
        # Named as the API names them: Anthropic's SDK reads an event by its name.
        return f"event: {chunk['type']}\n{data}".encode()
    return data.encode()


class ModelServer(HttpService):
    """An OpenAI-compatible server in a background thread; use as a context manager."""

    def __init__(
        self,
        responder: Responder,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model: str | list[str] = "scripted",
        keep_requests: bool = True,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
        wire_responders: dict[ModelApi, Responder] | None = None,
    ) -> None:
        self.responder = responder
        self.wire_responders = dict(wire_responders or {})
        # /v1/models lists every model served; the first one is the server's `model`.
        self.models = [model] if isinstance(model, str) else list(model)
        self.model = self.models[0]
        self.keep_requests = keep_requests
        self.max_request_bytes = max_request_bytes
        self.requests: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        # Responders run off the event loop, one call at a time in arrival order: one that
        # reads a long recording (serve-model's mismatch diff) holds up no other request,
        # and none has to be safe to call from two threads at once.
        self._calls: ThreadPoolExecutor | None = None
        self._http = HttpServer(
            self._app,
            host=host,
            port=port,
            max_request_bytes=max_request_bytes,
            read_timeout_s=read_timeout_s,
        )

    @property
    def bodies(self) -> list[Any]:
        """The model request bodies received (of any wire format), in order."""
        with self._lock:
            return [r.body for r in self.requests if r.path.split("?")[0] in API_PATHS]

    async def _app(self) -> web.Application:
        app = web.Application(client_max_size=self.max_request_bytes)
        calls = self._calls = ThreadPoolExecutor(1, thread_name_prefix="workbench-responder")

        async def stop_calls(app: web.Application) -> None:
            calls.shutdown(wait=False, cancel_futures=True)

        app.on_cleanup.append(stop_calls)
        for path in MODELS_PATHS:
            app.router.add_get(path, self._models)
        app.router.add_route("*", "/{tail:.*}", self._other)
        return app

    async def _models(self, request: web.Request) -> web.StreamResponse:
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": "workbench"}
            for name in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _other(self, request: web.Request) -> web.StreamResponse:
        api = API_PATHS.get(request.path) or _error_shape(request)
        if request.method != "POST" or request.path not in API_PATHS:
            return _error(api, 404, f"no route {request.method} {request.path}", "not_found")
        try:
            body = await read_json_object(request, self.max_request_bytes)
        except RequestProblem as problem:
            return _error(api, problem.status, str(problem), problem.kind)
        if self.keep_requests:
            headers = {name.lower(): value for name, value in request.headers.items()}
            with self._lock:
                self.requests.append(ReceivedRequest(request.path_qs, headers, body))
        try:
            assert self._calls is not None
            loop = asyncio.get_running_loop()
            reply = await loop.run_in_executor(self._calls, self._reply, api, body)
        except RecursionError:
            return _error(
                api, 400, "request body nests too deeply to read", "invalid_request_error"
            )
        except Exception as exc:  # a broken responder is a 500, not a dead server
            return _error(api, 500, f"responder failed: {exc}", "server_error")
        try:
            return await self._send(request, reply)
        except (_Dropped, ConnectionError):
            # Closed on purpose, or the client went away: nothing left to tell it.
            if request.transport is not None:
                request.transport.abort()
            return web.Response()

    def _reply(self, api: ModelApi, body: dict[str, Any]) -> Reply:
        if api in self.wire_responders:
            return self.wire_responders[api](body)
        reply = self.responder(chat_request(api, body))
        return fit_reply(reply, api, body, stream=bool(body.get("stream")))

    async def _stopping_within(self, seconds: float | None) -> bool:
        """Wait `seconds` (None: for ever); True when the server stops first."""
        closing = self._http.closing
        assert closing is not None
        try:
            await asyncio.wait_for(closing.wait(), seconds)
        except TimeoutError:
            return False
        return True

    async def _send(self, request: web.Request, reply: Reply) -> web.StreamResponse:
        if reply.delay_s and await self._stopping_within(reply.delay_s):
            raise _Dropped
        if reply.chunks is None:
            if reply.stall_after is not None:
                await self._stopping_within(None)
                raise _Dropped
            if reply.drop_after is not None:
                raise _Dropped
            return web.json_response(reply.body, status=reply.status, headers=reply.headers)
        response = web.StreamResponse(
            status=reply.status,
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
        )
        response.headers.update(reply.headers)
        response.enable_chunked_encoding()
        await response.prepare(request)
        for sent, chunk in enumerate(reply.chunks):
            if sent == reply.stall_after:
                await self._stopping_within(None)
                raise _Dropped
            if sent == reply.drop_after:
                raise _Dropped
            if sent and reply.chunk_delay_s and await self._stopping_within(reply.chunk_delay_s):
                raise _Dropped
            await response.write(_sse_bytes(chunk, reply.data_prefix, reply.api))
        count = len(reply.chunks)
        if reply.stall_after is not None and reply.stall_after >= count:
            await self._stopping_within(None)
            raise _Dropped
        if reply.drop_after is not None and reply.drop_after >= count:
            raise _Dropped
        if reply.done:
            await response.write(f"{reply.data_prefix}[DONE]\n\n".encode())
        await response.write_eof()
        return response


def _error(api: ModelApi, status: int, message: str, kind: str) -> web.Response:
    body = codec_for(api).error_body(status, message, kind)
    return web.json_response(body, status=status)


def _error_shape(request: web.Request) -> ModelApi:
    """The format an error for a path no format takes is written in: Anthropic's for a
    path or a header of its own, else chat completions'."""
    anthropic = codec_for("anthropic")
    spoken = request.path.startswith(anthropic.paths) or "anthropic-version" in request.headers
    return anthropic.api if spoken else "chat"


def fit_reply(reply: Reply, api: ModelApi, request: dict[str, Any], *, stream: bool) -> Reply:
    """`reply` in wire format `api`, streamed or whole as the request asked: as it is when it
    already is; else its answer read in its own format and written in `api`'s. Errors get
    the shape `api`'s clients read; a stall or a drop is the same in every format."""
    if reply.stall_after is not None or reply.drop_after is not None:
        return reply
    codec = codec_for(api)
    if reply.chunks is None and reply.status >= 400:
        body = codec.error_reply(reply.status, reply.body)
        if body is reply.body:
            return reply
        return Reply(status=reply.status, headers=reply.headers, body=body, api=api)
    if reply.api == api and (reply.chunks is not None) == stream:
        return reply
    try:
        if reply.chunks is not None:
            events = [chunk for chunk in reply.chunks if isinstance(chunk, dict)]
            answer = _answer_from_events(reply.api, events)
        elif isinstance(reply.body, dict):
            answer = codec_for(reply.api).answer_from_body(reply.body)
        else:
            return reply  # not an answer: sent as it is
    except WireError:
        return reply  # not an answer (a stream that says it failed): sent as it is
    if reply.api == api and answer.body:
        body = answer.body  # the answer's own body, ids and all
    else:
        model = str(request.get("model") or "model")
        body = codec.whole_body(
            answer.message,
            answer.finish_reason,
            answer.usage,
            model=model,
            response_id=_answer_id(api),
        )
    fitted = Reply(headers=reply.headers, api=api, delay_s=reply.delay_s)
    if not stream:
        fitted.body = body
        return fitted
    fitted.chunks = list(codec.stream_events(body))
    fitted.done, fitted.chunk_delay_s = codec.done_line, reply.chunk_delay_s
    return fitted


def _answer_from_events(api: ModelApi, events: list[dict[str, Any]]) -> WireAnswer:
    assembling = codec_for(api).assembler()
    for event in events:
        assembling.add(event)
    return assembling.result()


_answer_numbers = itertools.count(1)


def _answer_id(api: ModelApi) -> str:
    return f"{codec_for(api).answer_id_prefix}_workbench_{next(_answer_numbers)}"


class ScriptResponder:
    """Answers each request with the next matching step of a model script
    (docs/script-format.md): the same steps `ScriptedModel` follows in process."""

    def __init__(
        self, steps: Script | Sequence[ScriptStep | dict[str, Any]], *, model: str = "scripted"
    ) -> None:
        self.script = steps if isinstance(steps, Script) else Script(steps)
        self.model = model
        self._numbers = itertools.count(1)

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptResponder:
        """Load a JSON or TOML script; raises `ScriptError` with a one-line message."""
        steps, settings = load_script(path)
        return cls(list(steps), model=str(settings.get("name") or "scripted"))

    def __call__(self, body: dict[str, Any]) -> Reply:
        number = next(self._numbers)
        call = ModelCall(
            messages=list(body.get("messages") or []),
            tools=list(body.get("tools") or []),
            stream=bool(body.get("stream")),
        )
        try:
            step = self.script.next_step(call)
        except ScriptExhaustedError as exc:
            # 410 is never retried, so the client stops at once with this message.
            return Reply(
                status=410, body={"error": {"message": str(exc), "type": "script_exhausted"}}
            )
        delay_s = step.delay_ms / 1000.0
        if step.error is not None:
            return _error_reply(step, delay_s)
        response_id = f"chatcmpl-{self.model}-{number}"
        taken = used_call_ids(call.messages)
        if call.stream:
            chunks: list[dict[str, Any] | str] = list(
                step_chunks(
                    step,
                    model=self.model,
                    response_id=response_id,
                    call_number=number,
                    taken=taken,
                )
            )
            return Reply(chunks=chunks, done=True, delay_s=delay_s)
        completion = step_completion(
            step, model=self.model, response_id=response_id, call_number=number, taken=taken
        )
        return Reply(body=completion, delay_s=delay_s)


def _error_reply(step: ScriptStep, delay_s: float) -> Reply:
    error = step.error
    assert error is not None
    kind = error.effective_kind()
    if kind == "timeout":
        return Reply(stall_after=0, delay_s=delay_s)
    if kind == "connection":
        return Reply(drop_after=0, delay_s=delay_s)
    if kind == "stream_error":
        return Reply(chunks=[error_body(error)], delay_s=delay_s)
    headers = {"Retry-After": f"{error.retry_after:g}"} if error.retry_after is not None else {}
    return Reply(
        status=error.status or 500, headers=headers, body=error_body(error), delay_s=delay_s
    )
