"""Fixtures for the MCP tests; the helpers live in mcp_support."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator

import pytest

from tests.mcp.mcp_support import (
    EVERYTHING,
    LOOPBACK,
    HttpServerProcess,
    everything_stdio,
    free_port,
)


@pytest.fixture
def everything_http() -> Iterator[HttpServerProcess]:
    """server-everything over streamable HTTP, bound to 127.0.0.1 on a free port."""
    command = everything_stdio()["command"]
    port = free_port()
    process = subprocess.Popen(
        [command, "--require", str(LOOPBACK), str(EVERYTHING), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    listening = threading.Event()
    lines: list[str] = []

    def read_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:  # keeps draining so the server never blocks on it
            lines.append(line)
            if "listening on port" in line:
                listening.set()
        listening.set()  # the server exited: stop waiting either way

    threading.Thread(target=read_stderr, daemon=True).start()
    try:
        assert listening.wait(30), "server-everything did not start within 30 s"
        assert process.poll() is None, "server-everything exited: " + "".join(lines)
        yield HttpServerProcess(f"http://127.0.0.1:{port}/mcp", process)
    finally:
        process.terminate()
        process.wait(10)
