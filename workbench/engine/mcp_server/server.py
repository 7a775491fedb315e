"""The one module of the engine that imports the `mcp` SDK: the workbench's tools served
over stdio or streamable HTTP (`workbench mcp-serve`).

A call the tools refuse (a bad argument, an unknown run, a write on a read-only server)
and any failure inside one come back as a tool error (`isError`) with one line; the server
keeps serving. Answers are JSON text, bounded by `bounds`.

Over stdio the server stops when its stdin closes, at SIGTERM or at Ctrl-C, the same way:
the calls in progress are cancelled, so a fork or a suite being recorded ends its run
`cancelled` (the agent loop writes `run_end`), and the process exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import traceback
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

from workbench.engine.mcp_server.bounds import error_line
from workbench.engine.mcp_server.handlers import Workbench
from workbench.engine.mcp_server.tools import TOOLS, ToolError

log = logging.getLogger(__name__)

SERVER_NAME = "workbench"
MCP_PATH = "/mcp"
INSTRUCTIONS = (
    "Recorded runs of an LLM agent (agent workbench). Start with list_runs (or search_runs) "
    "to find a run id, then show_run to read its decision chain; diff_runs compares a fork "
    "with its parent, replay_run checks it replays identically, fork_run re-runs it from a "
    "turn with edits; annotate_run, judge_runs and check_rules review runs. Answers are "
    "bounded: `truncated` names what was cut, and next_offset, next_turn or "
    "next_events_from ask for the rest."
)


class ServeError(Exception):
    """The server cannot start (the port is taken, the address is wrong): one line."""


def _tool_list() -> list[types.Tool]:
    annotations = {True: types.ToolAnnotations(read_only_hint=True)}
    return [
        types.Tool(
            name=tool.name,
            description=tool.description,
            input_schema=tool.input_schema,
            annotations=annotations.get(tool.read_only)
            or types.ToolAnnotations(read_only_hint=False, destructive_hint=False),
        )
        for tool in TOOLS
    ]


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=error_line(message))], is_error=True
    )


def build_server(workbench: Workbench) -> Server[Any]:
    tools = _tool_list()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            answer = await workbench.call(params.name, params.arguments)
        except ToolError as exc:
            return _error(str(exc))
        except Exception as exc:  # a failure inside the engine must not end the server
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            message = f"{params.name} failed: {type(exc).__name__}{': ' + first if first else ''}"
            # One line on stderr too, naming where it failed, for a bug report.
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            log.error("%s (%s:%s)", error_line(message), frame.filename, frame.lineno)
            return _error(message)
        text = json.dumps(answer, ensure_ascii=False, default=str, separators=(",", ":"))
        return types.CallToolResult(content=[types.TextContent(text=text)])

    return Server(
        SERVER_NAME,
        version="0.1.0",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


# The longest request line read from stdin (a lint of hundreds of long descriptions is big).
MAX_LINE_BYTES = 256 * 1024 * 1024


async def serve_stdio(
    home: Path,
    *,
    allow_writes: bool = False,
    on_left_running: Callable[[int], None] | None = None,
) -> str:
    """Serve over stdin and stdout until stdin closes, SIGTERM or Ctrl-C (SIGINT); each
    cancels the calls in progress (their runs end `cancelled`) and returns which it was.
    Calls at work in a thread cannot be cancelled: when stdin closes, `on_left_running`
    hears how many there are (the process may end without them: nobody is left to read
    their answer)."""
    workbench = Workbench(home, allow_writes=allow_writes)
    server = build_server(workbench)
    serving = asyncio.current_task()
    assert serving is not None
    loop = asyncio.get_running_loop()
    stopped_by = "stdin closed"
    asked = False  # a stop was asked for here (a signal, stdin's end)

    def stop(reason: str) -> None:
        nonlocal stopped_by, asked
        if not asked:
            asked, stopped_by = True, reason
            serving.cancel()

    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stop, number.name)
    try:
        async with (
            _stdin_lines(lambda: stop("stdin closed")) as lines,
            stdio_server(stdin=lines) as (read_stream, write_stream),
        ):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    except asyncio.CancelledError:
        if serving.uncancel():  # a cancel from outside, not the stop asked for here
            raise
    except Exception:
        # Once the stop cancels them, the SDK's tasks may break off in their own words (a
        # stream closed under a message still being relayed): that is the stop too.
        if not asked:
            raise
        serving.uncancel()
    finally:
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(number)
        if stopped_by == "stdin closed" and workbench.running and on_left_running is not None:
            on_left_running(workbench.running)  # before the store is let go: a call holds it
        workbench.close()
    return stopped_by


class _Lines:
    """A stream's lines as the SDK's stdin reader takes them; `on_end` at its end."""

    def __init__(self, reader: asyncio.StreamReader, on_end: Callable[[], None]) -> None:
        self._reader = reader
        self._on_end = on_end

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            self._on_end()
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


@contextlib.asynccontextmanager
async def _stdin_lines(on_end: Callable[[], None]) -> AsyncIterator[Any]:
    """stdin's lines read on the event loop (None, for the SDK's own reading, when stdin is
    a regular file): the SDK reads them in a thread, which a stop cannot interrupt, so a
    server stopped while its stdin stayed open never exited. Meanwhile fd 0 is the null
    device, as the SDK makes it, so that tools and their children never read the wire."""
    private = os.dup(0)
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    pipe = os.fdopen(private, "rb", buffering=0)
    try:
        transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe
        )
    except (OSError, ValueError):  # not a pipe, socket or terminal
        pipe.close()
        yield None
        return
    saved = os.dup(0)  # the transport closes its own at the end of stdin
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        yield _Lines(reader, on_end)
    finally:
        transport.close()
        os.dup2(saved, 0)
        os.close(saved)
        os.set_blocking(0, True)  # the flag is shared with whoever else holds this stdin


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound and listening before the server starts, so the address it announces
    already takes connections (and port 0 is known)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family = infos[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(infos[0][4])
        sock.listen(128)
    except OSError as exc:
        raise ServeError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    sock.setblocking(False)
    return sock


async def serve_http(
    home: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    allow_writes: bool = False,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Streamable HTTP at `http://host:port/mcp` until cancelled; `on_ready` hears the URL."""
    import uvicorn

    workbench = Workbench(home, allow_writes=allow_writes)
    server = build_server(workbench)
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    sock = listening_socket(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    if on_ready is not None:
        on_ready(f"http://{shown}:{bound_port}{MCP_PATH}")
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        workbench.close()
