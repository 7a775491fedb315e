"""Helpers for the MCP tests: real servers as subprocesses, configs, frame lookups.

The reference servers are installed by scripts/install-mcp-servers.sh (run by scripts/test.sh);
a test skips, saying so, only when one is genuinely absent.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from traces.events import McpMessage
from traces.recorder import Recorder
from traces.writer import MemorySink

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
FAULT_SERVER = HERE / "servers" / "fault_server.py"
LOOPBACK = HERE / "servers" / "loopback.cjs"
TIME_SERVER = Path(sys.executable).parent / "mcp-server-time"
EVERYTHING = ROOT / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
FILESYSTEM = ROOT / "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
INSTALL_HINT = "run scripts/install-mcp-servers.sh"


def child_pids() -> set[int]:
    """Direct children of this process, read from /proc (Linux)."""
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        text = (task / "children").read_text().split()
        pids.update(int(pid) for pid in text)
    return pids


def gone(pid: int) -> bool:
    """True once the process has exited and been reaped (no zombie left)."""
    return not Path(f"/proc/{pid}").exists()


def write_config(folder: Path, servers: dict[str, Any]) -> Path:
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def fault(*flags: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FAULT_SERVER), *flags]}


def time_server() -> dict[str, Any]:
    if not TIME_SERVER.exists():
        pytest.skip(f"mcp-server-time is not installed ({INSTALL_HINT})")
    return {"command": str(TIME_SERVER), "args": ["--local-timezone", "UTC"]}


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not on PATH (needed for @modelcontextprotocol/server-everything)")
    return found


def everything_stdio() -> dict[str, Any]:
    if not EVERYTHING.exists():
        pytest.skip(f"server-everything is not installed in node_modules ({INSTALL_HINT})")
    return {"command": node(), "args": [str(EVERYTHING), "stdio"]}


def filesystem_server(*folders: Path) -> dict[str, Any]:
    """@modelcontextprotocol/server-filesystem, allowed to read and write `folders`."""
    if not FILESYSTEM.exists():
        pytest.skip(f"server-filesystem is not installed in node_modules ({INSTALL_HINT})")
    return {"command": node(), "args": [str(FILESYSTEM), *map(str, folders)]}


def new_recorder() -> tuple[Recorder, MemorySink]:
    sink = MemorySink()
    return Recorder("mcp-test", [sink]), sink


def frames(sink: MemorySink, server: str | None = None) -> list[McpMessage]:
    return [
        e
        for e in sink.events
        if isinstance(e, McpMessage) and (server is None or e.server == server)
    ]


def methods(sink: MemorySink, direction: str, server: str | None = None) -> list[str]:
    return [
        str(f.frame.get("method"))
        for f in frames(sink, server)
        if f.direction == direction and "method" in f.frame
    ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class HttpServerProcess:
    url: str
    process: subprocess.Popen[str]
