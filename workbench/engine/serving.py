"""The one runner of the workbench's HTTP servers: `proxy`, `serve-model` and `collect`.

`HttpServer` binds its socket when it is made (so a busy port is reported at once and the
port is known before serving), then serves an aiohttp application either in a background
thread with its own event loop (tests, the pytest fixture) or in the calling thread until
SIGTERM or Ctrl-C (the CLI), which both stop it in order: it stops accepting, open requests
get a moment to finish, the application's cleanup runs, and `serve_forever` says which
signal it was. A second signal while it stops sets `hurry`, for a cleanup that waits on
something slow (the proxy's recording, collect's writing) to give it up (`finish_or_hurry`).

Every server gets the same request limits, applied before its handlers run: a body over
`max_request_bytes` (as declared or as it arrives) is answered 413, and a body that has not
all arrived `read_timeout_s` after the headers is answered 408 and its connection closed,
so a client that trickles its body ties up one connection for a while, never the server.
The answers are one line, in the server's own error shape (`refuse`).

A module of its own below the engine's wings, so that `http` and `otel` share it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
import zlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Literal, Self, TypeVar

from aiohttp import web
from aiohttp.typedefs import Handler

# Long agent histories make big requests; 32 MiB holds thousands of turns and still bounds
# what one request can make the server hold.
DEFAULT_MAX_REQUEST_BYTES = 32 * 1024 * 1024
# Long enough for a big body over a slow link; a client that trickles it is cut off.
DEFAULT_READ_TIMEOUT_S = 60.0
# Enough for hundreds of clients connecting at once; the standard library's 5 refused them.
LISTEN_BACKLOG = 1024
# How long a stopping server lets open requests finish before cancelling them.
SHUTDOWN_GRACE_S = 0.5
# How long a stopping server's cleanup works quietly before it says what it is finishing.
QUIET_S = 0.5

T = TypeVar("T")
AppFactory = Callable[[], Awaitable[web.Application]]
# The answer to a refused request: its status and one line saying why.
Refusal = Callable[[int, str], web.StreamResponse]
# Why `serve_forever` returned: a signal, or `close()` from another thread.
StopReason = Literal["SIGTERM", "SIGINT", "closed"]


def run_loop(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run`, on uvloop's event loop where it is installed (not on Windows): the
    servers' sockets and streams then cost about half the interpreter's time."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


def json_refusal(status: int, message: str) -> web.Response:
    """A refusal as the OpenAI-style error most JSON clients read (`error.message`)."""
    kind = {408: "request_timeout", 413: "request_too_large"}.get(status, "invalid_request")
    return web.json_response({"error": {"message": message, "type": kind}}, status=status)


def too_large(limit: int) -> str:
    return f"request body is larger than the server's limit of {limit} bytes"


# The Content-Encodings of request bodies the servers read; anything else is refused (415).
ENCODINGS = ("identity", "gzip", "x-gzip", "deflate")


class BodyError(Exception):
    """A request body the server refuses: the HTTP status and one line saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# Inflated a slice at a time into one buffer: slices of one size reuse the same memory, and
# the buffer goes back to the system when freed, so a bomb leaves no heap behind.
_SLICE = 1024 * 1024


def inflated(body: bytes, encoding: str, limit: int, too_big: str) -> bytes:
    """The body a request's Content-Encoding (one of ENCODINGS) wraps, inflated a slice at
    a time so that no more than `limit` bytes are ever held (a small gzip bomb would
    otherwise take gigabytes): BodyError 413 saying `too_big` past the limit, 400 for a
    body that is not what it says."""
    if encoding == "identity":
        return body
    if encoding == "deflate":  # zlib-wrapped as the RFC says, or raw as some clients send
        wbits = zlib.MAX_WBITS if body[:1] and body[0] & 0x0F == 8 else -zlib.MAX_WBITS
    else:
        wbits = 16 + zlib.MAX_WBITS
    out = bytearray()
    rest = body
    while rest:  # a gzip body may be several members; each pass reads one
        inflater = zlib.decompressobj(wbits)
        while rest and not inflater.eof:  # each pass consumes input or adds output
            try:
                part = inflater.decompress(rest, min(_SLICE, limit + 1 - len(out)))
            except zlib.error as exc:
                raise BodyError(400, f"the body is not valid {encoding} ({exc})") from None
            out += part
            if len(out) > limit:
                out.clear()  # now, not when the refusal's traceback goes
                raise BodyError(413, too_big)
            rest = inflater.unconsumed_tail
        if not inflater.eof:
            raise BodyError(400, f"the body is not valid {encoding} (it ends too soon)")
        rest = inflater.unused_data
        if rest and wbits != 16 + zlib.MAX_WBITS:
            raise BodyError(400, f"the body is not valid {encoding} (data after its end)")
    return bytes(out)


def _quiet_aiohttp_logs() -> None:
    # Without logging configured, Python prints warnings with tracebacks to stderr; a client
    # that sends garbage or hangs up is routine for a server, and its answer says so already.
    for name in ("aiohttp.server", "aiohttp.web", "aiohttp.access"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


class HttpServer:
    """An aiohttp application on a socket bound now; serve with `start()` or `serve_forever()`.

    The application's factory should give it `client_max_size=max_request_bytes` (aiohttp's
    own check while the body arrives); the server checks the declared length itself."""

    def __init__(
        self,
        make_app: AppFactory,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
        refuse: Refusal = json_refusal,
        cancel_on_disconnect: bool = False,
        auto_decompress: bool = True,
        reuse_port: bool = False,
    ) -> None:
        self._make_app = make_app
        self.max_request_bytes = max_request_bytes
        self.read_timeout_s = read_timeout_s
        self._refuse = refuse
        # Cancel a request's handler when its client hangs up (else it notices on its next
        # write).
        self._cancel_on_disconnect = cancel_on_disconnect
        # Whether gzip and deflate bodies reach the handlers inflated, within the limit
        # (`_inflate`); off for a server that inflates them itself. aiohttp's own
        # decompression is never used: it inflates well past the limit before refusing,
        # and a few gzip bombs left the process hundreds of megabytes bigger for good.
        self._auto_decompress = auto_decompress
        # Other processes (the proxy's workers) listen on the same port: the kernel spreads
        # the connections among them.
        self._socket = _bind(host, port, reuse_port)
        self.host = host
        self.port = int(self._socket.getsockname()[1])
        self.closing: asyncio.Event | None = None
        self.hurry: asyncio.Event | None = None  # a second signal: stop at once
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._stopped_by: StopReason = "closed"
        _quiet_aiohttp_logs()

    @property
    def base_url(self) -> str:
        return f"http://{self.address}/v1"

    @property
    def address(self) -> str:
        """`host:port` as a client reaches it."""
        host = "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host
        return f"{_url_host(host)}:{self.port}"

    def start(self) -> None:
        """Serve in a background thread; returns once requests are accepted."""
        self._thread = threading.Thread(
            target=lambda: run_loop(self._serve()), name="workbench-http", daemon=True
        )
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise self._failure

    def serve_forever(self, on_ready: Callable[[], None] | None = None) -> StopReason:
        """Serve in the calling thread until SIGTERM, Ctrl-C (SIGINT) or `close()`; returns
        which, once the server has stopped."""
        run_loop(self._serve(on_ready, stop_on_signals=True))
        return self._stopped_by

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

    def _stop(self, reason: StopReason) -> None:
        if self.closing is not None and not self.closing.is_set():
            self._stopped_by = reason
            self.closing.set()
        elif self.hurry is not None:
            self.hurry.set()

    async def _serve(
        self, on_ready: Callable[[], None] | None = None, *, stop_on_signals: bool = False
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self.closing = asyncio.Event()
        # Only a server stopped by signals can be told to hurry (by another).
        self.hurry = asyncio.Event() if stop_on_signals else None
        signals: dict[signal.Signals, StopReason] = (
            {signal.SIGTERM: "SIGTERM", signal.SIGINT: "SIGINT"} if stop_on_signals else {}
        )
        for number, reason in signals.items():
            # A service manager's stop and Ctrl-C are the same orderly stop (the proxy ends
            # its runs, collect writes the traces still waiting).
            with contextlib.suppress(NotImplementedError, RuntimeError):
                self._loop.add_signal_handler(number, self._stop, reason)
        runner: web.AppRunner | None = None
        try:
            app = await self._make_app()
            app.middlewares.insert(0, self._limits)
            runner = web.AppRunner(
                app,
                access_log=None,
                handle_signals=False,
                shutdown_timeout=SHUTDOWN_GRACE_S,
                handler_cancellation=self._cancel_on_disconnect,
                auto_decompress=False,
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
            for number in signals:
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    self._loop.remove_signal_handler(number)

    @web.middleware
    async def _limits(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Reads the whole body within the limits before the handler runs (it then gets the
        body aiohttp keeps); refuses it with 413 or 408 otherwise."""
        if request.body_exists:
            limit = self.max_request_bytes
            if request.content_length is not None and request.content_length > limit:
                return self._refuse(413, too_large(limit))
            try:
                if request.content.is_eof():  # all of it is in: nothing to wait for
                    await request.read()
                else:
                    async with asyncio.timeout(self.read_timeout_s):
                        await request.read()
            except TimeoutError:
                response = self._refuse(
                    408,
                    f"the request body did not arrive within {self.read_timeout_s:g} s; "
                    "send it at once",
                )
                response.force_close()  # the rest of the body is never read
                await response.prepare(request)
                await response.write_eof()
                if request.transport is not None and request.transport.can_write_eof():
                    # The client sees the end of the answer at once; what it still sends
                    # is read and dropped for a moment, so the answer is not reset away.
                    request.transport.write_eof()
                return response
            except web.HTTPRequestEntityTooLarge:
                return self._refuse(413, too_large(limit))
            if self._auto_decompress:
                try:
                    await self._inflate(request)
                except BodyError as exc:
                    return self._refuse(exc.status, str(exc))
        return await handler(request)

    async def _inflate(self, request: web.Request) -> None:
        """Replace the body `request` read by what it inflates to (off the loop: it takes a
        while for a big one); BodyError for one refused."""
        encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding == "identity":
            return
        if encoding not in ENCODINGS:
            raise BodyError(415, f"content encoding {encoding[:40]!r}: send gzip, deflate or none")
        limit = self.max_request_bytes
        body = await asyncio.to_thread(
            inflated, await request.read(), encoding, limit, too_large(limit)
        )
        # What `read()`, `json()` and `text()` give from now on: aiohttp keeps the body it
        # read here, and a request cannot be cloned once read. Its headers still name the
        # encoding; the proxy drops that header, as it sends what it read.
        request._read_bytes = body


async def finish_or_hurry(
    work: asyncio.Future[Any], hurry: asyncio.Event | None, say_slow: Callable[[], None]
) -> bool:
    """Wait for `work`, what a stopping server finishes before it exits (recording what it
    took in): True once it is done. When a signal stopped the server (`hurry` is its
    `HttpServer.hurry`) and `work` takes over QUIET_S, `say_slow()` first (say what is left
    and that Ctrl-C again stops without it); False when a second signal comes first, with
    `work` still going: the caller stops it and says what was left undone."""
    hurried = asyncio.ensure_future((hurry or asyncio.Event()).wait())
    try:
        either = {work, hurried}
        done, _ = await asyncio.wait(either, timeout=QUIET_S, return_when=asyncio.FIRST_COMPLETED)
        if not done and hurry is not None:
            say_slow()
        done, _ = await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    finally:
        hurried.cancel()
    return work in done


class HttpService:
    """What every workbench server (`ModelServer`, `RecordingProxy`, `Collector`) does with
    its `HttpServer`: start it in a thread or serve in this one, close it, and be a context
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

    def serve_forever(self, on_ready: Callable[[], None] | None = None) -> StopReason:
        """Serve in the calling thread until SIGTERM or Ctrl-C — for the CLI."""
        return self._http.serve_forever(on_ready)

    def close(self) -> None:
        self._http.close()

    def lost(self) -> bool:
        """Whether something the server took in was lost (it said what on stderr): the
        command then exits non-zero."""
        return False

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _bind(host: str, port: int, reuse_port: bool = False) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            option = getattr(socket, "SO_REUSEPORT", None)  # not on Windows
            if option is None:
                raise OSError("this system cannot share a port between processes")
            sock.setsockopt(socket.SOL_SOCKET, option, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
