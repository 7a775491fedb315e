"""`workbench proxy`: a model endpoint that forwards to an upstream and records.

A client only changes its base URL. Model calls in any of the three wire formats —
`POST /v1/chat/completions`, `POST /v1/responses` (OpenAI clients, base URL
`http://HOST:PORT/v1`) and `POST /v1/messages` (Anthropic clients, base URL
`http://HOST:PORT`), streamed or not — go to the upstream (Anthropic Messages to the
`anthropic_upstream` when one is given) with the client's own headers (its credentials go
upstream and nowhere else); the answer comes back unchanged — streams piece by piece as
they arrive, errors with their status and body — and each exchange is recorded by a
`CaptureBook` into runs (workbench.engine.http.capture, docs/capture.md). Every other path
(`GET /v1/models`, `/v1/messages/count_tokens`, …) is passed through unrecorded, streamed as
it comes; a path with a `..` segment is refused. Server and upstream client are aiohttp.
The request handler forwards and hands each stream piece, with its arrival time, to the
exchange's recording task, which records the request once it has gone upstream (after the
exchanges it may continue) and the answer as it comes: whole at the format's last event
(`data: [DONE]`, `response.completed`, `message_stop`: clients close the connection there,
upstreams may keep it open), else at the stream's end. The handler waits for the recording
only when it falls far behind, so memory stays bounded.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

import aiohttp
from aiohttp import web

from traces.events import ModelApi
from workbench.engine.http.capture import RUN_HEADER, CaptureBook, Exchange
from workbench.engine.http.server import (
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_READ_TIMEOUT_S,
    HttpServer,
    HttpService,
    RequestProblem,
    error_response,
    parse_json_object,
    read_body,
)
from workbench.engine.http.wire_formats import API_PATHS

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
# Paths of Anthropic's API, which go to the Anthropic upstream when there is one.
_ANTHROPIC_PATHS = re.compile(r"^(/v1)?/messages(/|$)")
# Headers that belong to one connection, not to the request or answer being relayed; the
# body's length and encoding are set anew by whoever writes it.
_HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "content-encoding",
        "accept-encoding",
        RUN_HEADER,
    }
)
_SESSION: web.AppKey[aiohttp.ClientSession] = web.AppKey("upstream", aiohttp.ClientSession)


class ProxyError(Exception):
    """The proxy cannot start; one line saying why."""


class RecordingProxy(HttpService):
    """The proxy on a socket bound now; `start()` in a thread or `serve_forever()`."""

    def __init__(
        self,
        upstream: str,
        home: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
        anthropic_upstream: str | None = None,
    ) -> None:
        for flag, url in (("--upstream", upstream), ("--anthropic-upstream", anthropic_upstream)):
            if url is not None and not url.startswith(("http://", "https://")):
                raise ProxyError(f"{flag} must be an http(s) URL, not {url!r}")
        self.upstream = upstream.rstrip("/")
        # Anthropic's base URL has no `/v1`: its clients send `/v1/messages` as it is.
        self.anthropic_upstream = anthropic_upstream.rstrip("/") if anthropic_upstream else None
        self.book = CaptureBook(home, self.upstream, self.anthropic_upstream)
        self.max_request_bytes = max_request_bytes
        self._recording: set[asyncio.Task[None]] = set()  # exchanges still being recorded
        self._live: set[_Seen] = set()  # exchanges whose recording has not ended
        try:
            self._http = HttpServer(
                self._app,
                host=host,
                port=port,
                max_request_bytes=max_request_bytes,
                read_timeout_s=read_timeout_s,
                cancel_on_disconnect=True,
            )
        except OSError as exc:
            raise ProxyError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None

    async def _app(self) -> web.Application:
        app = web.Application(
            client_max_size=self.max_request_bytes, middlewares=[_within_base_path]
        )
        went_up = aiohttp.TraceConfig()
        went_up.on_request_chunk_sent.append(_went_up)
        app[_SESSION] = aiohttp.ClientSession(
            trace_configs=[went_up],
            # No pool limit: every client stream gets its own upstream connection at once.
            connector=aiohttp.TCPConnector(limit=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            skip_auto_headers=("Accept-Encoding", "User-Agent", "Content-Type"),
        )
        app.on_cleanup.append(self._cleanup)
        for path, api in API_PATHS.items():
            app.router.add_post(path, self._model_call(api))
        app.router.add_route("*", "/{tail:.*}", self._pass_through)
        return app

    async def _cleanup(self, app: web.Application) -> None:
        # Handlers have finished or been cancelled by now: what is still open was cut off.
        if self._recording:
            await asyncio.wait(set(self._recording))
        self.book.close()
        await app[_SESSION].close()

    def _target(self, request: web.Request) -> str:
        query = f"?{request.query_string}" if request.query_string else ""
        anthropic = _ANTHROPIC_PATHS.match(request.path) or "anthropic-version" in request.headers
        if self.anthropic_upstream is not None and anthropic:
            return self.anthropic_upstream + request.path + query
        return self.upstream + request.path.removeprefix("/v1") + query

    def _model_call(self, api: ModelApi) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._record_call(request, api)

        return handle

    async def _pass_through(self, request: web.Request) -> web.StreamResponse:
        try:
            raw = await read_body(request, self.max_request_bytes)
        except RequestProblem as problem:
            return problem.response()
        session = request.app[_SESSION]
        answer: web.StreamResponse | None = None
        try:
            async with session.request(
                request.method, self._target(request), data=raw, headers=_forwarded(request)
            ) as upstream:
                # Relayed piece by piece as it arrives: a stream the proxy does not record
                # (or any long answer) reaches the client as it comes, never held back.
                answer = web.StreamResponse(
                    status=upstream.status, headers=_relayed(upstream.headers)
                )
                await answer.prepare(request)
                async for piece in upstream.content.iter_any():
                    await answer.write(piece)
                await answer.write_eof()
                return answer
        except ConnectionError:
            return answer or web.Response()  # the client went away: nothing left to tell it
        except aiohttp.ClientError as exc:
            if answer is None:
                return _unreachable(self.upstream, exc)
            if request.transport is not None:  # broke off mid-answer: the client sees a cut
                request.transport.abort()
            return answer

    async def _record_call(self, request: web.Request, api: ModelApi) -> web.StreamResponse:
        try:
            raw = await read_body(request, self.max_request_bytes)
            body = parse_json_object(raw)
        except RequestProblem as problem:
            return problem.response()
        headers = {name.lower(): value for name, value in request.headers.items()}
        seen = _Seen(api, body, headers, request.query_string, time.monotonic())
        # The exchanges before this one that it may continue are recorded first: those whose
        # answer is over for their client, to its end; the rest, up to their request.
        earlier = [
            other.settled if other.answered or other.over.is_set() else other.begun
            for other in self._live
        ]
        self._live.add(seen)
        self._track(self._record(seen, earlier))
        session = request.app[_SESSION]
        try:
            async with session.post(
                self._target(request),
                data=raw,
                headers=_forwarded(request),
                trace_request_ctx=seen,
            ) as upstream:
                seen.status = upstream.status
                if upstream.status >= 400 or not _is_event_stream(upstream):
                    seen.whole = await upstream.read()
                    seen.ended = time.monotonic()
                    seen.answered = True
                    return web.Response(
                        status=upstream.status,
                        body=seen.whole,
                        headers=_relayed(upstream.headers),
                    )
                return await self._stream(request, upstream, seen)
        except aiohttp.ClientError as exc:
            seen.problem = f"cannot reach the upstream: {exc}"
            return _unreachable(self.upstream, exc)
        except asyncio.CancelledError:
            # The client hung up (its run stays incomplete unless its answer was whole), or
            # the proxy is stopping (its runs end as cancelled when the book closes).
            if not seen.whole_answer:
                seen.cut = "stopped" if self._http.stopping else "hung_up"
            raise
        finally:
            seen.ended = seen.ended or time.monotonic()
            seen.over.set()
            seen.pieces.end()

    def _track(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run recording work in a task the proxy waits for before it stops."""
        task = asyncio.create_task(work)
        self._recording.add(task)
        task.add_done_callback(self._recording.discard)
        return task

    async def _stream(
        self, request: web.Request, upstream: aiohttp.ClientResponse, seen: _Seen
    ) -> web.StreamResponse:
        answer = web.StreamResponse(status=upstream.status, headers=_relayed(upstream.headers))
        try:
            await answer.prepare(request)
            tail = b""
            async for piece in upstream.content.iter_any():
                arrived = time.monotonic()
                # Said before the client can see it, so that its next request, which may
                # continue this answer's run, is recorded after the answer.
                tail = _watch_for_done(seen, tail, piece)
                await answer.write(piece)
                # Recorded as it comes, in the exchange's recording task; the answer waits
                # only when that task falls far behind, which bounds what is held.
                await seen.pieces.put(arrived, piece)
            # The whole answer is written: a client that hangs up now had all of it.
            seen.answered = seen.whole_answer = True
            await answer.write_eof()
        except ConnectionError:
            if not seen.whole_answer:
                seen.cut = "hung_up"  # the client went away mid-answer
        except aiohttp.ClientError as exc:
            # The upstream broke off: the client sees the same cut.
            seen.problem = f"the upstream stream broke off: {exc}"
            if request.transport is not None:
                request.transport.abort()
        seen.ended = time.monotonic()
        return answer

    async def _record(self, seen: _Seen, earlier: list[asyncio.Event]) -> None:
        """Record one exchange: its request once it has gone upstream (after the exchanges
        it may continue), then its answer as it comes."""
        book = self.book
        try:
            waits = [asyncio.ensure_future(event.wait()) for event in (seen.went_up, seen.over)]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for wait in waits:
                wait.cancel()
            for event in earlier:
                await event.wait()
            seen.exchange = book.begin(seen.body, seen.headers, seen.query, seen.sent, seen.api)
            seen.begun.set()
            await _record_answer(book, seen)
        except Exception as exc:  # recording must never take the proxy down
            book.report(f"could not record an exchange: {type(exc).__name__}: {exc}")
        finally:
            seen.pieces.stop()  # the handler never waits for a recording that has stopped
            seen.begun.set()
            seen.settled.set()
            self._live.discard(seen)


# How many bytes of a stream may wait to be recorded before the answer waits for them.
MAX_UNRECORDED_BYTES = 4 * 1024 * 1024
# `data: [DONE]` (also `data:[DONE]`) on a line of its own.
_DONE_LINE = re.compile(rb"(?:^|[\r\n])data: ?\[DONE\]")
# The last event of a stream of the other formats, by the name its payload (and `event:`
# line) carries.
_LAST_EVENTS: dict[ModelApi, re.Pattern[bytes]] = {
    "responses": re.compile(rb'response\.(?:completed|incomplete|failed)\b|"type": ?"error"'),
    "anthropic": re.compile(rb'\bmessage_stop\b|"type": ?"error"'),
}


def _watch_for_done(seen: _Seen, tail: bytes, piece: bytes) -> bytes:
    """Mark the answer over when `piece` brings the stream's last event — `data: [DONE]`,
    or the format's last event — (which may start in the piece before it, whose end is
    `tail`); returns the new tail."""
    if not seen.answered:
        joined = tail + piece[:32]
        last = _LAST_EVENTS.get(seen.api)
        if last is not None:
            seen.answered = bool(last.search(piece) or last.search(joined))
        elif (b"[DONE]" in piece and _DONE_LINE.search(piece)) or (
            b"[DONE]" in joined and _DONE_LINE.search(joined)
        ):
            seen.answered = True
    return (tail + piece)[-32:]


class _Pieces:
    """A stream's pieces on their way from the handler to its recording, each with its
    arrival time (`time.monotonic()`), then an end. The handler waits in `put` while more
    than MAX_UNRECORDED_BYTES are not yet taken, so a long stream is never held whole."""

    def __init__(self) -> None:
        self._items: deque[tuple[float, bytes] | None] = deque()
        self._size = 0
        self._ready = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._stopped = False

    async def put(self, arrived: float, piece: bytes) -> None:
        if self._stopped:
            return
        self._items.append((arrived, piece))
        self._size += len(piece)
        self._ready.set()
        if self._size > MAX_UNRECORDED_BYTES:
            self._room.clear()
            await self._room.wait()

    def end(self) -> None:
        self._items.append(None)
        self._ready.set()

    async def take(self) -> tuple[float, bytes] | None:
        """The next piece, or None at the end."""
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        item = self._items.popleft()
        if item is not None:
            self._size -= len(item[1])
            if self._size <= MAX_UNRECORDED_BYTES // 2:
                self._room.set()
        return item

    def stop(self) -> None:
        """Nothing more is recorded: drop what waits and never hold the handler again."""
        self._stopped = True
        self._items.clear()
        self._size = 0
        self._room.set()


@dataclass(eq=False)
class _Seen:
    """What the proxy saw of one exchange, with `time.monotonic()` times, for recording."""

    api: ModelApi
    body: dict[str, Any]
    headers: dict[str, str]
    query: str
    sent: float
    status: int | None = None
    whole: bytes | None = None  # a non-streamed answer (or an error's body)
    pieces: _Pieces = field(default_factory=_Pieces)  # a stream, as it comes
    ended: float = 0.0
    problem: str | None = None  # the upstream could not be reached or broke off
    cut: Literal["hung_up", "stopped"] | None = None
    answered: bool = False  # the client has (or is being sent) the whole answer
    whole_answer: bool = False  # every piece of the stream reached the client
    went_up: asyncio.Event = field(default_factory=asyncio.Event)  # the request was sent
    over: asyncio.Event = field(default_factory=asyncio.Event)  # the handler is done
    begun: asyncio.Event = field(default_factory=asyncio.Event)  # the request is recorded
    settled: asyncio.Event = field(default_factory=asyncio.Event)  # and its answer's end
    exchange: Exchange | None = None


async def _went_up(
    session: aiohttp.ClientSession, context: Any, params: aiohttp.TraceRequestChunkSentParams
) -> None:
    seen = context.trace_request_ctx
    if isinstance(seen, _Seen) and not seen.went_up.is_set():
        seen.sent = time.monotonic()
        seen.went_up.set()


async def _record_answer(book: CaptureBook, seen: _Seen) -> None:
    """Record the answer's pieces as they come. A stream is whole at `[DONE]` or the
    format's last event: recorded then, whatever the upstream does after it. Without
    either, its end decides."""
    exchange = seen.exchange
    decoder = SseDecoder()
    while (item := await seen.pieces.take()) is not None:
        if exchange is None or decoder.done or exchange.closed:
            continue  # what comes after the last event reached the client; it was whole
        arrived, piece = item
        for data in decoder.feed(piece):
            exchange.chunk(data, arrived)
            # Other clients' requests and chunks go first, a chunk's recording at most
            # (a piece can hold a whole answer).
            await asyncio.sleep(0)
            if exchange.assembler.done:
                break
        if decoder.done or exchange.assembler.done:
            exchange.finish(arrived)
            seen.settled.set()
    if exchange is None or decoder.done or exchange.closed:
        return
    if seen.whole is not None and seen.status is not None:
        if seen.status >= 400:
            exchange.failed(seen.status, _error_text(seen.status, seen.whole), seen.ended)
        else:
            exchange.completion(seen.whole, seen.ended)
    elif seen.problem is not None:
        exchange.failed(502, seen.problem, seen.ended, "connection")
    elif seen.cut is None or exchange.saw_finish:
        exchange.finish(seen.ended)  # the stream ended, or a chunk said the answer had
    elif seen.cut == "hung_up":
        exchange.abandoned()


class SseDecoder:
    """Turns the bytes of a server-sent-event stream into the JSON payloads of its `data:`
    events, as they complete, up to `data: [DONE]` (then `done`; nothing after it is
    decoded). Comments, other fields and other non-JSON data are passed over; they reached
    the client all the same."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []  # the line begun, in pieces (a line can be long)
        self._data: list[bytes] = []
        self.done = False

    def feed(self, piece: bytes) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        if self.done:
            return found
        if b"\n" not in piece:
            self._parts.append(piece)
            return found
        if self._parts:
            piece, self._parts = b"".join([*self._parts, piece]), []
        *lines, rest = piece.split(b"\n")
        if rest:
            self._parts.append(rest)
        for line in lines:
            line = line.rstrip(b"\r")
            if not line:
                self._dispatch(found)
            elif line.startswith(b"data:"):
                value = line[5:]
                value = value[1:] if value.startswith(b" ") else value
                if value == b"[DONE]" and not self._data:
                    # The answer is whole: no blank line needs to follow.
                    self.done, self._parts = True, []
                    break
                self._data.append(value)
        return found

    def _dispatch(self, found: list[dict[str, Any]]) -> None:
        if not self._data:
            return
        text, self._data = b"\n".join(self._data), []
        try:
            value = json.loads(text)
        except ValueError:
            return
        if isinstance(value, dict):
            found.append(value)


@web.middleware
async def _within_base_path(request: web.Request, handler: Any) -> web.StreamResponse:
    """Refuse a path with a `..` segment, however encoded (`/v1/../x`, `/v1/%2e%2e/x`,
    `..%2f`, `..\\`): it would reach the upstream outside the base path it was given."""
    path = request.raw_path.partition("?")[0]
    for _ in range(3):  # `%252e` is `%2e` once decoded: decode until nothing changes
        decoded = unquote(path)
        if decoded == path:
            break
        path = decoded
    if ".." in re.split(r"[/\\]", path):
        message = (
            f"the path {request.raw_path.partition('?')[0]!r} has a '..' segment, which "
            "would leave the upstream's base path; send the path without it"
        )
        return error_response(400, message, "invalid_request_error")
    response: web.StreamResponse = await handler(request)
    return response


def _is_event_stream(upstream: aiohttp.ClientResponse) -> bool:
    return upstream.content_type == "text/event-stream"


def _forwarded(request: web.Request) -> dict[str, str]:
    return {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}


def _relayed(headers: Any) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in _HOP_HEADERS}


def _error_text(status: int, body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
        message = data["error"]["message"] if isinstance(data.get("error"), dict) else None
    except (ValueError, AttributeError, KeyError, TypeError):
        message = None
    return f"HTTP {status}: {message or text[:500] or 'no body'}"


def _unreachable(upstream: str, exc: BaseException) -> web.Response:
    detail = str(exc) or type(exc).__name__
    return error_response(502, f"cannot reach the upstream {upstream}: {detail}", "upstream_error")
