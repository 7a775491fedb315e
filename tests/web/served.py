"""`workbench web` as people start it: a process group of its own (Ctrl-C goes to the
group, as a terminal sends it), on a copy of the demo's home, its URL read from its first
line; and a browser's session of it, over a real WebSocket, as bytes of terminal output."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from tests.support.processes import WAIT_S, WORKBENCH, Lines

TOKEN = "s3cret-token-for-the-tests"


@dataclass
class Served:
    process: subprocess.Popen[str]
    out: Lines
    err: Lines
    url: str  # as printed, with the token

    @property
    def origin(self) -> str:
        return self.url.split("/?", 1)[0]

    @property
    def port(self) -> int:
        return int(self.origin.rsplit(":", 1)[1])

    @property
    def cookie(self) -> dict[str, str]:
        """The cookie the printed URL gives a browser (aiohttp's client keeps none for an
        address like 127.0.0.1, so the tests send it as a header)."""
        return {"Cookie": f"workbench-web-{self.port}={TOKEN}"}

    def ctrl_c(self) -> None:
        os.killpg(self.process.pid, signal.SIGINT)

    def apps(self) -> list[int]:
        """The TUI processes it runs, one per browser session (its children)."""
        found = []
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            found += [int(pid) for pid in (task / "children").read_text().split()]
        return found


@contextmanager
def served(home: Path, *flags: str) -> Iterator[Served]:
    if importlib.util.find_spec("textual_serve") is None:
        pytest.skip("textual-serve is not installed: pip install 'agent-workbench[web]'")
    process = subprocess.Popen(
        [WORKBENCH, "--home", str(home), "web", "--token", TOKEN, *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        out, err = Lines(process.stdout), Lines(process.stderr)
        ready = out.wait_for(lambda line: line.startswith("serving the workbench at "))
        assert ready is not None, err.all()
        yield Served(process, out, err, ready.split()[4])
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


async def screen_until(ws: aiohttp.ClientWebSocketResponse, *wanted: bytes) -> bytes:
    """The terminal output the app sends until it has shown every one of `wanted`."""
    seen = b""
    try:
        async with asyncio.timeout(WAIT_S):
            while not all(text in seen for text in wanted):
                message = await ws.receive()
                if message.type == aiohttp.WSMsgType.BINARY:
                    seen += message.data
                elif message.type != aiohttp.WSMsgType.TEXT:
                    raise AssertionError(f"the session ended ({message.type}): {seen[-400:]!r}")
    except TimeoutError:
        missing = [text for text in wanted if text not in seen]
        raise AssertionError(f"the screen never showed {missing}: {seen[-2000:]!r}") from None
    return seen


def socket_url(served: Served) -> str:
    return f"{served.origin}/ws?width=120&height=40"
