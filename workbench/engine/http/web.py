"""`workbench web`: the TUI in a browser, served by textual-serve behind a guard.

textual-serve starts one TUI process per browser WebSocket and has no authentication of
its own: it accepts a socket from any Origin, so any web page a user visits could drive a
TUI on their machine, and a DNS-rebound name could read it. The guard is an aiohttp
middleware on textual-serve's own application (its routes are left as they are):

- **Host**: a request must name the served host and port (`Host:`), or it is refused 421:
  a page whose name was rebound to this address sends its own name.
- **Token**: the printed URL carries a random token (`?token=…`); the first request with it
  gets it back as an HttpOnly, SameSite=Strict cookie and is sent on without it in the URL
  (the page's WebSocket and static files then carry the cookie). Without either, 403.
- **Origin**: the WebSocket must come from the served origin (a browser always says which
  page opens a socket), or it is refused 403: another site's page cannot open one even
  with the user's cookie.
- The pages may not be framed (a frame could take the user's keys), say no referrer, and
  may ask nothing of another host (Content-Security-Policy): textual-serve's page would
  fetch a web font, the one request that would leave a shared box.

The TUI it starts is `python -m workbench --home HOME tui`, with `--read-only` unless
writes are allowed: forks and exports are then refused in the app.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import shlex
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from aiohttp import web
from aiohttp.typedefs import Handler

from workbench.engine.serving import HttpServer, HttpService

# How the browser's WebSocket reaches the app (textual-serve's route).
WEBSOCKET_PATH = "/ws"
TOKEN_PARAM = "token"
LOOPBACK = ("127.0.0.1", "::1", "localhost")
# How long a stopping server waits for the browsers' TUIs to quit (they are told to).
SESSIONS_END_S = 30.0


class WebError(Exception):
    """The web server cannot start; one line saying why."""


def text_refusal(status: int, message: str) -> web.Response:
    """A refused request, as a browser shows it: one line of text."""
    return web.Response(status=status, text=message + "\n")


class _Log(logging.Handler):
    """textual-serve's log records (an app that failed to start, a socket that broke) as
    one line each on stderr, without the tracebacks it would attach."""

    def emit(self, record: logging.LogRecord) -> None:
        print(f"workbench web: {record.getMessage()}", file=sys.stderr, flush=True)


class WorkbenchWeb(HttpService):
    """The workbench TUI on `home` served to browsers at `url` (which holds the token)."""

    def __init__(
        self,
        home: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        allow_writes: bool = False,
        public_url: str | None = None,
        **limits: Any,
    ) -> None:
        try:
            import textual_serve.server  # noqa: F401
        except ImportError:
            raise WebError(
                "workbench web needs textual-serve: pip install 'agent-workbench[web]'"
            ) from None
        if public_url is None and host not in LOOPBACK:
            raise WebError(
                f"--host {host} serves other machines: say the address their browsers use "
                "with --url (e.g. --url http://debug-box:8000), which the Host and Origin "
                "checks hold them to"
            )
        self.home = home
        self.token = token or secrets.token_urlsafe(24)
        self.allow_writes = allow_writes
        try:
            self._http = HttpServer(
                self._make_app, host=host, port=port, refuse=text_refusal, **limits
            )
        except OSError as exc:
            raise WebError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        origin = (public_url or f"http://{self._http.address}").rstrip("/")
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path:
            self._http.close()
            raise WebError(f"--url {public_url}: give the origin, as http://HOST:PORT")
        self.origin = origin
        socket_origin = ("wss" if parts.scheme == "https" else "ws") + origin[len(parts.scheme) :]
        # textual-serve's page has inline scripts and styles of its own.
        self._policy = (
            f"default-src 'self'; connect-src 'self' {socket_origin}; "
            "script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
        )
        self._host = parts.netloc.lower()
        self._secure = parts.scheme == "https"
        # Per port: two servers on one host share the browser's cookies for that host.
        self._cookie = f"workbench-web-{self._http.port}"
        # The browsers' sessions (their handlers' tasks), each running a TUI.
        self._sessions: set[asyncio.Task[object]] = set()
        logger = logging.getLogger("textual-serve")
        logger.handlers[:] = [_Log()]
        logger.propagate = False

    @property
    def url(self) -> str:
        """Where a browser opens the workbench: the origin, with the token."""
        return f"{self.origin}/?{urlencode({TOKEN_PARAM: self.token})}"

    @property
    def command(self) -> str:
        """The shell command textual-serve runs for each browser: this interpreter's
        workbench TUI on the same home (`exec`: signals reach the app, not a shell)."""
        argv = [sys.executable, "-m", "workbench", "--home", str(self.home.resolve()), "tui"]
        if not self.allow_writes:
            argv.append("--read-only")
        return "exec " + shlex.join(argv)

    async def _make_app(self) -> web.Application:
        from textual_serve.server import Server

        class Quiet(Server):
            async def on_startup(self, app: web.Application) -> None:
                """The command prints where it serves; textual-serve's banner would name
                the command line (the home's path) instead."""

        server = Quiet(
            self.command,
            host=self._http.host,
            port=self._http.port,
            title="agent workbench",
            public_url=self.origin,
        )
        app = await server._make_app()  # its routes, templates and start-up, as they are
        app.middlewares.append(self._guard)
        app.on_shutdown.append(self._end_sessions)
        return app

    async def _end_sessions(self, app: web.Application) -> None:
        """Before the server closes its connections: each session's handler is cancelled,
        which is how textual-serve tells its TUI to quit and waits for it to end, so no
        TUI outlives the server."""
        sessions = list(self._sessions)
        for task in sessions:
            task.cancel()
        if sessions:
            await asyncio.wait(sessions, timeout=SESSIONS_END_S)

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.host.lower() != self._host:
            return text_refusal(
                421, f"this server answers for {self._host} only (Host: {request.host[:80]})"
            )
        given = request.query.get(TOKEN_PARAM)
        if given is not None:
            if not _same(given, self.token):
                return text_refusal(403, "wrong token: open the URL workbench web printed")
            return self._let_in(request)
        if not _same(request.cookies.get(self._cookie, ""), self.token):
            return text_refusal(403, "no token: open the URL workbench web printed")
        if request.path == WEBSOCKET_PATH:
            if request.headers.get("Origin") != self.origin:
                return text_refusal(403, f"a WebSocket is accepted from {self.origin} only")
            return await self._session(request, handler)
        response = await handler(request)
        if not response.prepared:  # a WebSocket's headers are sent already
            response.headers["X-Frame-Options"] = "DENY"
            response.headers["Content-Security-Policy"] = self._policy
            response.headers["Referrer-Policy"] = "no-referrer"
            response.headers["Cache-Control"] = "no-store"
        return response

    async def _session(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        task = asyncio.current_task()
        assert task is not None
        self._sessions.add(task)
        try:
            return await handler(request)
        finally:
            self._sessions.discard(task)

    def _let_in(self, request: web.Request) -> web.StreamResponse:
        """The token as a cookie, and the same page again without it in the address (nor
        in the history, nor in a Referer)."""
        rest = [(key, value) for key, value in request.query.items() if key != TOKEN_PARAM]
        location = request.path + (f"?{urlencode(rest)}" if rest else "")
        response = web.HTTPSeeOther(location)
        response.set_cookie(
            self._cookie,
            self.token,
            path="/",
            httponly=True,
            samesite="Strict",
            secure=self._secure,
        )
        response.headers["Referrer-Policy"] = "no-referrer"
        return response


def _same(given: str, token: str) -> bool:
    """Whether `given` is the token, in a time that does not tell how much of it matched."""
    return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())
