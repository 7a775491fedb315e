"""Running the workbench's HTTP servers (`serve-model`, `proxy`) on aiohttp.

`HttpServer` binds its socket when it is made (so a busy port is reported at once and the
port is known before serving), then serves an aiohttp application either in a background
thread with its own event loop (tests, the pytest fixture) or in the calling thread until
Ctrl-C (the CLI). `read_json_object` reads a request body the same way for every server: a
size limit answered with 413, and 400 for a body that is not UTF-8, not JSON, nested too
deeply or not an object, always as an OpenAI-style JSON error, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Self

from aiohttp import web

# Long agent histories make big requests; 32 MiB holds thousands of turns and still bounds
# what one request can make the server hold.
DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024
# Enough for hundreds of clients connecting at once; the standard library's 5 refused them.
LISTEN_BACKLOG = 1024
# How long a stopping server lets open requests finish before cancelling them.
SHUTDOWN_GRACE_S = 0.5

AppFactory = Callable[[], Awaitable[web.Application]]


class RequestProblem(Exception):
    """A request the server answers with an error status and one line saying why."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind

    def response(self) -> web.Response:
        return error_response(self.status, str(self), self.kind)


def error_response(
    status: int, message: str, kind: str, headers: dict[str, str] | None = None
) -> web.Response:
    """An error in the shape OpenAI clients read (`error.message`, `error.type`)."""
    body = {"error": {"message": message, "type": kind}}
    return web.json_response(body, status=status, headers=headers)


async def read_json_object(request: web.Request, limit: int) -> dict[str, Any]:
    """The request body as a JSON object; raises `RequestProblem` (413 or 400) otherwise."""
    return parse_json_object(await read_body(request, limit))


async def read_body(request: web.Request, limit: int) -> bytes:
    """The request body, at most `limit` bytes; raises `RequestProblem` (413) when larger."""
    too_big = f"request body is larger than the server's limit of {limit} bytes"
    if request.content_length is not None and request.content_length > limit:
        raise RequestProblem(413, too_big, "request_too_large")
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise RequestProblem(413, too_big, "request_too_large") from None


def parse_json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RequestProblem(400, f"request body is not valid UTF-8 ({exc.reason})") from None
    except RecursionError:
        raise RequestProblem(400, "request body nests too deeply to read") from None
    except ValueError as exc:
        raise RequestProblem(400, f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise RequestProblem(400, "request body is not a JSON object")
    return body


def _quiet_aiohttp_logs() -> None:
    # Without logging configured, Python prints warnings with tracebacks to stderr; a client
    # that sends garbage or hangs up is routine for a server, and its answer says so already.
    for name in ("aiohttp.server", "aiohttp.web", "aiohttp.access"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


class HttpServer:
    """An aiohttp application on a socket bound now; serve with `start()` or `serve_forever()`."""

    def __init__(
        self,
        make_app: AppFactory,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        cancel_on_disconnect: bool = False,
    ) -> None:
        self._make_app = make_app
        # Cancel a request's handler when its client hangs up (else it notices on its next
        # write).
        self._cancel_on_disconnect = cancel_on_disconnect
        self._socket = _bind(host, port)
        self.host = host
        self.port = int(self._socket.getsockname()[1])
        self.closing: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        _quiet_aiohttp_logs()

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
        return f"http://{_url_host(host)}:{self.port}/v1"

    def start(self) -> None:
        """Serve in a background thread; returns once requests are accepted."""
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._serve()), name="workbench-http", daemon=True
        )
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise self._failure

    def serve_forever(self, on_ready: Callable[[], None] | None = None) -> None:
        """Serve in the calling thread until `close()` or SIGTERM (then it returns); Ctrl-C
        raises KeyboardInterrupt once the server has stopped."""
        asyncio.run(self._serve(on_ready, stop_on_sigterm=True))

    @property
    def stopping(self) -> bool:
        return self.closing is not None and self.closing.is_set()

    def close(self) -> None:
        loop, closing = self._loop, self.closing
        if loop is not None and closing is not None and not loop.is_closed():
            # The loop may end between the check and the call.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(closing.set)
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._socket.close()

    async def _serve(
        self, on_ready: Callable[[], None] | None = None, *, stop_on_sigterm: bool = False
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self.closing = asyncio.Event()
        if stop_on_sigterm:
            # A service manager's stop is an orderly stop too (the proxy ends its runs).
            with contextlib.suppress(NotImplementedError, RuntimeError):
                self._loop.add_signal_handler(signal.SIGTERM, self.closing.set)
        runner: web.AppRunner | None = None
        try:
            app = await self._make_app()
            runner = web.AppRunner(
                app,
                access_log=None,
                handle_signals=False,
                shutdown_timeout=SHUTDOWN_GRACE_S,
                handler_cancellation=self._cancel_on_disconnect,
            )
            await runner.setup()
            site = web.SockSite(runner, self._socket, backlog=LISTEN_BACKLOG)
            await site.start()
        except BaseException as exc:
            self._failure = exc
            self._ready.set()
            if runner is not None:
                await runner.cleanup()
            raise
        self._ready.set()
        if on_ready is not None:
            on_ready()
        try:
            await self.closing.wait()
        finally:
            self.closing.set()  # releases replies that wait for the server to stop
            await runner.cleanup()


class HttpService:
    """What every workbench server (`ModelServer`, `RecordingProxy`) does with its
    `HttpServer`: start it in a thread or serve in this one, close it, and be a context
    manager. A subclass sets `self._http` in its `__init__`."""

    _http: HttpServer

    @property
    def port(self) -> int:
        return self._http.port

    @property
    def base_url(self) -> str:
        return self._http.base_url

    def start(self) -> Self:
        """Serve in a background thread; returns once requests are accepted."""
        self._http.start()
        return self

    def serve_forever(self, on_ready: Callable[[], None] | None = None) -> None:
        """Serve in the calling thread until Ctrl-C (KeyboardInterrupt) — for the CLI."""
        self._http.serve_forever(on_ready)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
