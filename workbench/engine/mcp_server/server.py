"""The one module of the engine that imports the `mcp` SDK: the workbench's tools served
over stdio or streamable HTTP (`workbench mcp-serve`).

A call the tools refuse (a bad argument, an unknown run, a write on a read-only server)
and any failure inside one come back as a tool error (`isError`) with one line; the server
keeps serving. Answers are JSON text, bounded by `bounds`.
"""

from __future__ import annotations

import json
import logging
import socket
import traceback
from collections.abc import Callable
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
    "turn with edits. Answers are bounded: `truncated` names what was cut, and next_offset, "
    "next_turn or next_events_from ask for the rest."
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


async def serve_stdio(
    home: Path,
    *,
    allow_writes: bool = False,
    on_left_running: Callable[[int], None] | None = None,
) -> None:
    """Serve over stdin and stdout until stdin closes. The calls then still waiting are
    cancelled; those at work in a thread cannot be, and `on_left_running` hears how many
    there are (the process may end without them: nobody is left to read their answer)."""
    workbench = Workbench(home, allow_writes=allow_writes)
    server = build_server(workbench)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        if workbench.running and on_left_running is not None:
            on_left_running(workbench.running)
    finally:
        workbench.close()


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
