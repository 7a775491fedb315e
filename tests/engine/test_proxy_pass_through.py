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
