"""What talking to MCP servers needs besides the SDK (`agent_core.mcp_client` holds that):
the servers' settings, the two failures a connection reports, a one-line summary of what a
failed server printed, and the bookkeeping of a stdio server's process and its group.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Literal, TextIO, TypeAlias

CallErrorKind: TypeAlias = Literal["rpc_error", "timeout", "closed", "protocol"]

STDERR_TAIL_CHARS = 400
# How long a server has to answer initialize and the first tools/list (`--mcp-start-timeout`).
DEFAULT_START_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class StdioServerConfig:
    name: str
    command: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None

    def describe(self) -> str:
        return " ".join([self.command, *self.args])


@dataclass(frozen=True)
class HttpServerConfig:
    name: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return self.url


ServerConfig: TypeAlias = StdioServerConfig | HttpServerConfig


class McpStartError(Exception):
    """A server could not be started or did not complete the handshake."""

    def __init__(self, server: str, command: str, reason: str, stderr: str = "") -> None:
        self.server = server
        self.command = command
        self.reason = reason
        self.stderr = stderr
        message = f"MCP server '{server}' ({command}) could not start: {reason}"
        if stderr:
            message += f"; it printed: {stderr_summary(stderr)}"
        super().__init__(message)


class McpCallError(Exception):
    """One request to a running server failed; `str()` is short and model-readable."""

    def __init__(self, kind: CallErrorKind, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.code = code


def tail_on_one_line(text: str, limit: int = STDERR_TAIL_CHARS) -> str:
    """`text`'s non-blank lines joined by " | "; past `limit` characters, the END kept (a
    validation error names what went wrong last), led by "…"."""
    flat = " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    return flat if len(flat) <= limit else "…" + flat[-limit:]


# A stack frame says where, not what: Node's "at fn (file:1:2)", Python's 'File "x", line 3'.
_STACK_FRAME = re.compile(r'^(at\s|File ".*", line \d+)')
_ERROR_LINE = re.compile(r"error|cannot|not found|no such|denied|refus", re.IGNORECASE)


def stderr_summary(text: str, limit: int = STDERR_TAIL_CHARS) -> str:
    """What a server that would not start printed, on one line: stack frames left out, its
    last line that names an error kept whole (Node's `Error: Cannot find module '…'` comes
    before ten lines of frames and versions), then as much of the end as fits."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    kept = [line for line in lines if not _STACK_FRAME.match(line)]
    flat = " | ".join(kept)
    if len(flat) <= limit:
        return flat
    errors = [index for index, line in enumerate(kept) if _ERROR_LINE.search(line)]
    if not errors:
        return "…" + flat[-limit:]
    key = kept[errors[-1]]
    after = " | ".join(kept[errors[-1] + 1 :])
    room = max(limit - len(key), 0)
    tail = after if len(after) <= room else "…" + after[-room:] if room else ""
    return f"… {key}" + (f" | {tail}" if tail else "")


class StderrLog:
    """The server's stderr goes to a temporary file, read back to explain failures."""

    def __init__(self) -> None:
        # Closed by the connection's exit stack, not a with-block: it outlives this call.
        self.file: TextIO = tempfile.TemporaryFile(  # noqa: SIM115
            mode="w+", encoding="utf-8", errors="replace"
        )
        self._final = ""

    def tail(self, limit: int = 4000) -> str:
        if self.file.closed:
            return self._final
        # pread leaves the offset the child shares with us untouched.
        fd = self.file.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - limit)
        return os.pread(fd, size - start, start).decode("utf-8", errors="replace")

    def close(self) -> None:
        self._final = self.tail()  # errors are explained after the process is gone
        self.file.close()


def exception_leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in exception_leaves(inner)]
    return [exc]


def sole_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    leaves = exception_leaves(group)
    return leaves[0] if len(leaves) == 1 else None


def os_reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "command not found (check the path, or that it is on PATH)"
    if isinstance(exc, PermissionError):
        return "permission denied (is the file executable?)"
    return exc.strerror or str(exc)


def child_pids() -> set[int]:
    """This process's direct children (Linux `/proc`); empty where that is not available."""
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for task in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/children") as f:
                found.update(int(pid) for pid in f.read().split())
    return found


def session_leader(pids: set[int]) -> int | None:
    """The stdio server among new children: the SDK starts it in a session of its own."""
    for pid in sorted(pids):
        with contextlib.suppress(OSError):
            if os.getsid(pid) == pid:
                return pid
    return None


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
