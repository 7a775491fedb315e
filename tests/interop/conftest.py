"""Fixtures for the OpenTelemetry and Parquet tests: homes holding the golden runs, and a
small OTLP/HTTP receiver (aiohttp) that keeps every request it gets."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def golden_home(wb_home: Path, golden_dir: Path) -> Path:
    """$WORKBENCH_HOME holding the v1 golden traces, one run per status."""
    for path in golden_dir.glob("*.jsonl"):
        shutil.copy(path, wb_home / "traces" / path.name)
    return wb_home


@dataclass
class Received:
    content_type: str
    headers: dict[str, str]
    body: bytes


@dataclass
class RecordingReceiver:
    """An OTLP/HTTP endpoint that answers 200 and keeps what it got."""

    endpoint: str = ""
    requests: list[Received] = field(default_factory=list)

    def spans(self) -> list[Any]:
        from workbench.engine.otel.ingest import parse_protobuf

        return [span for r in self.requests for span in parse_protobuf(r.body)]


@pytest.fixture
def otlp_receiver() -> Iterator[RecordingReceiver]:
    pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")
    import asyncio

    from aiohttp import web

    received = RecordingReceiver()

    async def take(request: web.Request) -> web.Response:
        received.requests.append(
            Received(request.content_type, dict(request.headers), await request.read())
        )
        return web.Response(body=b"", content_type="application/x-protobuf")

    loop = asyncio.new_event_loop()
    ready = threading.Event()
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/traces", take)
    runner = web.AppRunner(app)

    async def start() -> None:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        received.endpoint = f"http://127.0.0.1:{runner.addresses[0][1]}/v1/traces"

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ready.wait()
    yield received
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
