"""Streams are relayed as they come, on the paths the proxy records and on those it does
not: a stream's first piece reaches the client while the upstream is still writing the
rest."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from workbench.engine.http.proxy import RecordingProxy
from workbench.engine.http.server import HttpServer


class HeldStream:
    """An upstream that writes one piece on an unrecorded path, then waits for the test to
    have read it before it writes the second (or gives up, so a buffering proxy fails)."""

    def __init__(self) -> None:
        self.first_read = threading.Event()
        self.http = HttpServer(self._app)

    async def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._stream)
        return app

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        answer = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await answer.prepare(request)
        await answer.write(b"data: first\n\n")
        released = await asyncio.to_thread(self.first_read.wait, 10)
        await answer.write(b"data: second\n\n" if released else b"data: too late\n\n")
        await answer.write_eof()
        return answer


@pytest.mark.parametrize("path", ["/uploads/stream", "/responses", "/messages"])
def test_a_stream_reaches_the_client_as_it_comes(tmp_path: Path, path: str) -> None:
    upstream = HeldStream()
    upstream.http.start()
    try:
        with RecordingProxy(upstream.http.base_url, tmp_path / "home") as proxy:
            url = f"{proxy.base_url}{path}"
            with httpx.stream("POST", url, content=b"{}", timeout=30) as answer:
                pieces = answer.iter_bytes()
                first = next(pieces)
                upstream.first_read.set()
                rest = b"".join(pieces)
    finally:
        upstream.http.close()
    assert first == b"data: first\n\n"
    assert rest == b"data: second\n\n"


class CookieSetter:
    """An upstream that sets a cookie on every answer and tells which cookies it was sent,
    as a provider's edge does (`__cf_bm` on api.openai.com)."""

    def __init__(self) -> None:
        self.http = HttpServer(self._app)

    async def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._answer)
        return app

    async def _answer(self, request: web.Request) -> web.Response:
        answer = web.json_response({"cookie_sent": request.headers.get("Cookie")})
        answer.set_cookie("edge_session", f"for-{request.headers.get('X-Client', '?')}")
        return answer


@pytest.mark.parametrize("path", ["/models", "/chat/completions"])
def test_a_cookie_one_client_got_is_never_sent_for_another(tmp_path: Path, path: str) -> None:
    upstream = CookieSetter()
    upstream.http.start()
    try:
        # By host name: cookies of an IP address would not be kept anyway.
        base = upstream.http.base_url.replace("127.0.0.1", "localhost")
        with RecordingProxy(base, tmp_path / "home") as proxy:
            url = f"{proxy.base_url}{path}"
            body = b'{"model": "m", "messages": []}'
            first = httpx.post(url, content=body, headers={"X-Client": "a"}, timeout=30)
            second = httpx.post(url, content=body, headers={"X-Client": "b"}, timeout=30)
            own = httpx.post(url, content=body, headers={"Cookie": "mine=1"}, timeout=30)
    finally:
        upstream.http.close()
    assert first.cookies.get("edge_session") == "for-a"  # the client gets its cookie
    assert second.json() == {"cookie_sent": None}  # ... and the next client not a's
    assert own.json() == {"cookie_sent": "mine=1"}  # a client's own cookies still go up
