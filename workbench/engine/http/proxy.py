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
The request handlers only forward: what they see of each exchange (its request, when it went
upstream, each stream piece with its arrival time, how it ended) is handed to a
`RecordingChannel` (workbench.engine.http.channel), which records it in a process of its
own, at a lower CPU priority, so that recording never delays a chunk; a handler waits for it
only when it falls far behind, so memory stays bounded. Stopping (SIGTERM, Ctrl-C) stops
accepting, then waits until every exchange is recorded; a second Ctrl-C stops at once, and
`lost()` then says a capture was lost (the command exits non-zero).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import aiohttp
from aiohttp import web

from agent_core.wire.codecs import API_PATHS
from traces.events import ModelApi
from workbench.engine.http.capture import RUN_HEADER
from workbench.engine.http.channel import RecordingChannel
from workbench.engine.http.fleet import WorkerFailed
from workbench.engine.http.recording_messages import Cut
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
from workbench.engine.http.sessions import SESSION_HEADER

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
        SESSION_HEADER,
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
        workers: int = 1,
        worker: tuple[int, int, int] | None = None,
    ) -> None:
        """`workers` processes forward, each on the same port (workbench.engine.http.fleet);
        `worker` is set in a worker process, by the proxy that started it."""
        for flag, url in (("--upstream", upstream), ("--anthropic-upstream", anthropic_upstream)):
            if url is not None and not url.startswith(("http://", "https://")):
                raise ProxyError(f"{flag} must be an http(s) URL, not {url!r}")
        self.upstream = upstream.rstrip("/")
        # Anthropic's base URL has no `/v1`: its clients send `/v1/messages` as it is.
        self.anthropic_upstream = anthropic_upstream.rstrip("/") if anthropic_upstream else None
        self.max_request_bytes = max_request_bytes
        self._channel = RecordingChannel(
            home, self.upstream, self.anthropic_upstream, workers=workers, worker=worker
        )
        try:
            self._http = HttpServer(
                self._app,
                host=host,
                port=port,
                max_request_bytes=max_request_bytes,
                read_timeout_s=read_timeout_s,
                cancel_on_disconnect=True,
                reuse_port=workers > 1 or worker is not None,
            )
        except OSError as exc:
            raise ProxyError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self._channel.worker_settings = [
            *(host, str(self._http.port), self.upstream, self.anthropic_upstream or ""),
            *(str(max_request_bytes), str(read_timeout_s)),
        ]

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
            # Cookies an upstream sets belong to the client that got them, never to the
            # next client's request: none are kept (nor looked up for each request).
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=("Accept-Encoding", "User-Agent", "Content-Type"),
        )
        app.on_cleanup.append(self._cleanup)
        try:
            await self._channel.open()
        except WorkerFailed as exc:
            raise ProxyError(str(exc)) from None
        for path, api in API_PATHS.items():
            app.router.add_post(path, self._model_call(api))
        app.router.add_route("*", "/{tail:.*}", self._pass_through)
        return app

    def lost(self) -> bool:
        return self._channel.lost

    async def _cleanup(self, app: web.Application) -> None:
        # Handlers have finished or been cancelled by now: what is still open was cut off.
        # Recording ends once it has recorded everything sent to it, or at a second signal.
        await self._channel.close(self._http.hurry)
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
            parse_json_object(raw)
        except RequestProblem as refused:
            return refused.response()
        channel = self._channel
        headers, forwarded = _recorded_and_forwarded(request)
        key = channel.arrived(api, raw, headers, request.query_string, time.monotonic())
        session = request.app[_SESSION]
        ended: float | None = None
        problem: str | None = None
        cut: Cut | None = None
        whole = False  # the client has (or is being sent) all of the answer
        try:
            async with session.post(
                self._target(request),
                data=raw,
                headers=forwarded,
                trace_request_ctx=_Upward(channel, key),
            ) as upstream:
                if upstream.status >= 400 or not _is_event_stream(upstream):
                    body = await upstream.read()
                    ended = time.monotonic()
                    channel.whole(key, upstream.status, body, ended)
                    whole = True
                    return web.Response(
                        status=upstream.status, body=body, headers=_relayed(upstream.headers)
                    )
                answer = web.StreamResponse(
                    status=upstream.status, headers=_relayed(upstream.headers)
                )
                try:
                    await answer.prepare(request)
                    now = time.monotonic
                    async for piece in upstream.content.iter_any():
                        # Sent to recording before the client can see it, so that its next
                        # request, which may continue this answer's run, comes after it.
                        full = channel.piece(key, now(), piece)
                        await answer.write(piece)
                        if full:  # recording is far behind: the only wait for it
                            await channel.room()
                    # The whole answer is written: a client that hangs up now had all of it.
                    whole = True
                    await answer.write_eof()
                except ConnectionError:
                    if not whole:
                        cut = "hung_up"  # the client went away mid-answer
                except aiohttp.ClientError as exc:
                    # The upstream broke off: the client sees the same cut.
                    problem = f"the upstream stream broke off: {exc}"
                    if request.transport is not None:
                        request.transport.abort()
                ended = time.monotonic()
                return answer
        except aiohttp.ClientError as exc:
            problem = f"cannot reach the upstream: {exc}"
            return _unreachable(self.upstream, exc)
        except asyncio.CancelledError:
            # The client hung up (its run stays incomplete unless its answer was whole), or
            # the proxy is stopping (its runs end as cancelled when recording ends).
            if not whole:
                cut = "stopped" if self._http.stopping else "hung_up"
            raise
        finally:
            channel.over(key, ended or time.monotonic(), problem, cut, whole)


@dataclass(eq=False)
class _Upward:
    """The exchange a request sent upstream belongs to, for aiohttp's request tracing."""

    channel: RecordingChannel
    key: int
    sent: bool = False


async def _went_up(
    session: aiohttp.ClientSession, context: Any, params: aiohttp.TraceRequestChunkSentParams
) -> None:
    upward = context.trace_request_ctx
    if isinstance(upward, _Upward) and not upward.sent:
        upward.sent = True
        upward.channel.went_up(upward.key, time.monotonic())


@web.middleware
async def _within_base_path(request: web.Request, handler: Any) -> web.StreamResponse:
    """Refuse a path with a `..` segment, however encoded (`/v1/../x`, `/v1/%2e%2e/x`,
    `..%2f`, `..\\`): it would reach the upstream outside the base path it was given."""
    path = request.raw_path.partition("?")[0]
    if "%" in path or ".." in path:  # else nothing to decode, and no `..` to find
        for _ in range(3):  # `%252e` is `%2e` once decoded: decode until nothing changes
            decoded = unquote(path)
            if decoded == path:
                break
            path = decoded
    if ".." in path and ".." in re.split(r"[/\\]", path):
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


def _recorded_and_forwarded(request: web.Request) -> tuple[dict[str, str], dict[str, str]]:
    """The request's headers as recorded (every one, names in lower case) and as sent
    upstream (`_forwarded`), in one pass over them."""
    recorded: dict[str, str] = {}
    forwarded: dict[str, str] = {}
    for name, value in request.headers.items():
        lower = name.lower()
        recorded[lower] = value
        if lower not in _HOP_HEADERS:
            forwarded[name] = value
    return recorded, forwarded


def _relayed(headers: Any) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in _HOP_HEADERS}


def _unreachable(upstream: str, exc: BaseException) -> web.Response:
    detail = str(exc) or type(exc).__name__
    return error_response(502, f"cannot reach the upstream {upstream}: {detail}", "upstream_error")
