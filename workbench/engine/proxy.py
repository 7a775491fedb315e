"""`workbench proxy`: an OpenAI-compatible endpoint that forwards to an upstream and records.

A client only changes its base URL. `POST /v1/chat/completions` (streamed or not) goes to the
upstream with the client's own headers (its credentials go upstream and nowhere else); the
answer comes back unchanged — streams chunk by chunk as they arrive, errors with their
status and body — and each exchange is recorded by a `CaptureBook` into runs
(workbench.engine.capture, docs/capture.md). Every other path (`GET /v1/models`, say) is
passed through unrecorded. Server and upstream client are aiohttp; nothing is buffered
beyond the SSE line being decoded for the trace, and recording happens after each piece
has been written to the client.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from workbench.engine.capture import RUN_HEADER, CaptureBook, Exchange
from workbench.engine.http_server import (
    DEFAULT_MAX_REQUEST_BYTES,
    HttpServer,
    RequestProblem,
    error_response,
    parse_json_object,
    read_body,
)

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
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


class RecordingProxy:
    """The proxy on a socket bound now; `start()` in a thread or `serve_forever()`."""

    def __init__(
        self,
        upstream: str,
        home: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    ) -> None:
        if not upstream.startswith(("http://", "https://")):
            raise ProxyError(f"--upstream must be an http(s) URL, not {upstream!r}")
        self.upstream = upstream.rstrip("/")
        self.book = CaptureBook(home, self.upstream)
        self.max_request_bytes = max_request_bytes
        self._recording: set[asyncio.Task[None]] = set()  # answers still being recorded
        try:
            self._http = HttpServer(self._app, host=host, port=port, cancel_on_disconnect=True)
        except OSError as exc:
            raise ProxyError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None

    @property
    def base_url(self) -> str:
        return self._http.base_url

    def start(self) -> RecordingProxy:
        self._http.start()
        return self

    def serve_forever(self, on_ready: Callable[[], None] | None = None) -> None:
        self._http.serve_forever(on_ready)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RecordingProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def _app(self) -> web.Application:
        app = web.Application(client_max_size=self.max_request_bytes)
        app[_SESSION] = aiohttp.ClientSession(
            # No pool limit: every client stream gets its own upstream connection at once.
            connector=aiohttp.TCPConnector(limit=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            skip_auto_headers=("Accept-Encoding", "User-Agent", "Content-Type"),
        )
        app.on_cleanup.append(self._cleanup)
        for path in CHAT_PATHS:
            app.router.add_post(path, self._chat)
        app.router.add_route("*", "/{tail:.*}", self._pass_through)
        return app

    async def _cleanup(self, app: web.Application) -> None:
        # Handlers have finished or been cancelled by now: what is still open was cut off.
        if self._recording:
            await asyncio.wait(set(self._recording))
        self.book.close()
        await app[_SESSION].close()

    def _target(self, request: web.Request) -> str:
        path = request.path.removeprefix("/v1")
        return self.upstream + path + (f"?{request.query_string}" if request.query_string else "")

    async def _pass_through(self, request: web.Request) -> web.StreamResponse:
        try:
            raw = await read_body(request, self.max_request_bytes)
        except RequestProblem as problem:
            return problem.response()
        session = request.app[_SESSION]
        try:
            async with session.request(
                request.method, self._target(request), data=raw, headers=_forwarded(request)
            ) as upstream:
                body = await upstream.read()
                return web.Response(
                    status=upstream.status, body=body, headers=_relayed(upstream.headers)
                )
        except aiohttp.ClientError as exc:
            return _unreachable(self.upstream, exc)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            raw = await read_body(request, self.max_request_bytes)
            body = parse_json_object(raw)
        except RequestProblem as problem:
            return problem.response()
        headers = {name.lower(): value for name, value in request.headers.items()}
        session = request.app[_SESSION]
        call = session.post(self._target(request), data=raw, headers=_forwarded(request))
        # The request goes upstream first; it is recorded while the model thinks.
        pending: asyncio.Future[aiohttp.ClientResponse] = asyncio.ensure_future(call)
        try:
            await asyncio.sleep(0)  # let it start sending
            # This request may continue an answer still being recorded: that goes first.
            # (`wait`, unlike `gather`, leaves those tasks running if this one is cancelled.)
            if self._recording:
                await asyncio.wait(set(self._recording))
        except asyncio.CancelledError:
            _drop(pending)
            raise
        exchange = self.book.begin(body, headers)
        try:
            upstream = await pending
        except aiohttp.ClientError as exc:
            if exchange is not None:
                exchange.failed(502, f"cannot reach the upstream: {exc}", "connection")
            return _unreachable(self.upstream, exc)
        except asyncio.CancelledError:
            _drop(pending)
            self._hung_up(exchange)
            raise
        try:
            if upstream.status >= 400 or not _is_event_stream(upstream):
                return await self._whole(upstream, exchange)
            return await self._stream(request, upstream, exchange)
        except aiohttp.ClientError as exc:
            if exchange is not None:
                exchange.failed(502, f"the upstream broke off: {exc}", "connection")
            return _unreachable(self.upstream, exc)
        except asyncio.CancelledError:
            self._hung_up(exchange)
            raise
        finally:
            upstream.release()

    def _hung_up(self, exchange: Exchange | None) -> None:
        # The client hung up (the run stays incomplete), or the proxy is stopping (its runs
        # end as cancelled when the book closes).
        if exchange is not None and not self._http.stopping:
            exchange.abandoned()

    async def _whole(
        self, upstream: aiohttp.ClientResponse, exchange: Exchange | None
    ) -> web.StreamResponse:
        body = await upstream.read()
        answer = web.Response(status=upstream.status, body=body, headers=_relayed(upstream.headers))
        if exchange is not None:
            if upstream.status >= 400:
                exchange.failed(upstream.status, _error_text(upstream.status, body))
            else:
                exchange.completion(body)
        return answer

    async def _stream(
        self, request: web.Request, upstream: aiohttp.ClientResponse, exchange: Exchange | None
    ) -> web.StreamResponse:
        answer = web.StreamResponse(status=upstream.status, headers=_relayed(upstream.headers))
        # Pieces are recorded once the answer is through, so recording never holds up a
        # chunk; each keeps the time it arrived.
        arrivals: list[tuple[float, bytes]] = []
        try:
            await answer.prepare(request)
            async for piece in upstream.content.iter_any():
                await answer.write(piece)
                arrivals.append((time.monotonic(), piece))
            await answer.write_eof()
        except ConnectionError:
            # The client went away mid-answer; the run stays incomplete.
            _record_pieces(exchange, arrivals)
            if exchange is not None:
                exchange.abandoned()
            return answer
        except aiohttp.ClientError as exc:
            # The upstream broke off: the client sees the same cut.
            _record_pieces(exchange, arrivals)
            if exchange is not None:
                exchange.failed(502, f"the upstream stream broke off: {exc}", "connection")
            if request.transport is not None:
                request.transport.abort()
            return answer
        except asyncio.CancelledError:
            _record_pieces(exchange, arrivals)
            raise
        if exchange is not None:
            # Recorded in a task of its own: the handler is done, so the client's next
            # request on this connection is read at once.
            task = asyncio.create_task(_record_answer(exchange, arrivals))
            self._recording.add(task)
            task.add_done_callback(self._recording.discard)
        return answer


async def _record_answer(exchange: Exchange, arrivals: list[tuple[float, bytes]]) -> None:
    decoder = SseDecoder()
    for arrived, piece in arrivals:
        for data in decoder.feed(piece):
            exchange.chunk(data, arrived)
        # Other clients' requests and chunks go first: recording can wait.
        await asyncio.sleep(0)
    exchange.finish()


def _record_pieces(exchange: Exchange | None, arrivals: list[tuple[float, bytes]]) -> None:
    """Record what arrived of an answer that was cut off."""
    if exchange is None:
        return
    decoder = SseDecoder()
    for arrived, piece in arrivals:
        for data in decoder.feed(piece):
            exchange.chunk(data, arrived)


class SseDecoder:
    """Turns the bytes of a server-sent-event stream into the JSON payloads of its `data:`
    events, as they complete. Comments, other fields and non-JSON data (`[DONE]`) are
    passed over; they reached the client all the same."""

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []

    def feed(self, piece: bytes) -> list[dict[str, Any]]:
        self._buffer += piece
        *lines, self._buffer = self._buffer.split(b"\n")
        found: list[dict[str, Any]] = []
        for line in lines:
            line = line.rstrip(b"\r")
            if not line:
                self._dispatch(found)
            elif line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
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


def _drop(pending: asyncio.Future[aiohttp.ClientResponse]) -> None:
    """Give up on an upstream call, and release its connection should it answer anyway."""

    def release(done: asyncio.Future[aiohttp.ClientResponse]) -> None:
        if not done.cancelled() and done.exception() is None:
            done.result().release()

    pending.add_done_callback(release)
    pending.cancel()


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


def proxy_forever(
    upstream: str,
    home: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Proxy until Ctrl-C (KeyboardInterrupt propagates once open runs are ended)."""
    proxy = RecordingProxy(
        upstream, home, host=host, port=port, max_request_bytes=max_request_bytes
    )
    proxy.serve_forever(None if on_ready is None else lambda: on_ready(proxy.base_url))
