"""`workbench mcp list`, `workbench mcp call` and `workbench mcp-conformance`.

`list` and `call` debug a server without a model. Each is a recorded session
(`workbench.engine.recording.running.mcp_session`): a run trace like `workbench run` writes, so the
frames can be read back with `workbench show` or in the TUI.

`mcp-conformance URL` is the client the official MCP conformance harness drives: it connects,
lists the tools and calls each one with arguments made from its schema.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traces.text import one_line
from workbench.cli.common import (
    CliError,
    ExitCode,
    add_home,
    add_mcp_start_timeout,
    positive_float,
    print_json,
    resolve_home,
    text_or_file,
)

if TYPE_CHECKING:
    from agent_core.mcp_tools import McpToolset
    from workbench.engine.recording.running.mcp_session import McpSession

# The mcp SDK takes about a second to import, and the event models load pydantic, so they
# load only when an MCP command runs.

DEFAULT_CONFIG_ENV = "WORKBENCH_MCP_CONFIG"
DEFAULT_CONFIG_FILE = ".mcp.json"


def register(subparsers: Any) -> None:
    mcp = subparsers.add_parser(
        "mcp",
        help="list or call the tools of MCP servers without a model (traced like a run)",
        description="Debug MCP servers: every JSON-RPC frame is written to a run trace.",
    )
    commands = mcp.add_subparsers(dest="mcp_command", metavar="COMMAND", required=True)

    listing = commands.add_parser("list", help="servers, their tools and input schemas")
    _add_common(listing)
    listing.add_argument("--server", action="append", help="only this server (repeatable)")
    listing.set_defaults(func=_cmd_list)

    call = commands.add_parser("call", help="call one tool of one server")
    call.add_argument("server", help="server name from the config")
    call.add_argument("tool", help="tool name, as the server or `mcp list` names it")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object, or @FILE")
    _add_common(call)
    call.set_defaults(func=_cmd_call)

    conformance = subparsers.add_parser(
        "mcp-conformance",
        help="client driver for the official MCP conformance harness",
        description=(
            "Connect to URL over streamable HTTP, list the tools and call each one with "
            "arguments made from its schema (elicitations are accepted with their defaults). "
            "The scenario name, if any, comes in $MCP_CONFORMANCE_SCENARIO."
        ),
    )
    conformance.add_argument("url")
    conformance.add_argument(
        "--timeout", type=positive_float, default=20.0, help="seconds per request"
    )
    conformance.set_defaults(func=_cmd_conformance)


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mcp-config",
        type=Path,
        metavar="FILE",
        help=f"mcpServers JSON (default: ${DEFAULT_CONFIG_ENV}, else ./{DEFAULT_CONFIG_FILE})",
    )
    parser.add_argument(
        "--timeout", type=positive_float, default=30.0, help="seconds per tool call"
    )
    add_mcp_start_timeout(parser)
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    add_home(parser)


def _config_path(args: argparse.Namespace) -> Path:
    path = args.mcp_config or Path(os.environ.get(DEFAULT_CONFIG_ENV) or DEFAULT_CONFIG_FILE)
    if not path.is_file():
        raise CliError(f"MCP config {path}: no such file; pass --mcp-config FILE")
    return path


# -- recorded sessions (workbench.engine.recording.running.mcp_session) --------------------------


def _recorded(
    args: argparse.Namespace,
    task: str,
    servers: list[str] | None,
    body: Callable[[McpSession], Awaitable[None]],
) -> int:
    """Run `body` in a recorded MCP session; 0 when it completes without errors."""
    from workbench.engine.recording.running.mcp_session import record_session

    session = record_session(
        resolve_home(args),
        _config_path(args),
        task,
        body,
        servers=servers,
        tool_timeout_s=args.timeout,
        startup_timeout_s=args.mcp_start_timeout,
        on_trace=lambda path: print(f"trace: {path}", file=sys.stderr),
    )
    from workbench.cli.driving import check_trace_whole

    check_trace_whole(session.writer)
    return 0 if session.ok else 1


# -- mcp list --------------------------------------------------------------------------------


def _cmd_list(args: argparse.Namespace) -> int:
    listing: list[dict[str, Any]] = []

    async def body(session: McpSession) -> None:
        listing.extend(_describe(toolset) for toolset in session.toolsets)

    code = _recorded(args, "mcp list", args.server, body)
    if args.json:
        print_json(listing)
    else:
        for server in listing:
            _print_server(server)
    return code


def _describe(toolset: McpToolset) -> dict[str, Any]:
    from agent_core.mcp_tools import convert_schema

    connection = toolset.connection
    info = connection.server_info
    offered = {original: name for name, original in toolset.tool_names().items()}
    return {
        "server": toolset.server,
        "transport": "stdio" if hasattr(connection.config, "command") else "http",
        "target": connection.config.describe(),
        "server_info": info.get("serverInfo", {}),
        "protocol_version": info.get("protocolVersion"),
        "tools": [
            {
                "name": tool.get("name"),
                "offered_as": offered.get(str(tool.get("name"))),
                "description": tool.get("description") or tool.get("title") or "",
                "input_schema": tool.get("inputSchema"),
                "parameters": convert_schema(tool.get("inputSchema")),
            }
            for tool in connection.tools
        ],
    }


def _print_server(server: dict[str, Any]) -> None:
    info = server["server_info"]
    print(
        f"{server['server']}  ({server['transport']}: {server['target']})  "
        f"{info.get('name', '?')} {info.get('version', '')}, "
        f"protocol {server['protocol_version']}, {len(server['tools'])} tools"
    )
    for tool in server["tools"]:
        alias = f"  (offered as {tool['offered_as']})" if tool["offered_as"] != tool["name"] else ""
        print(f"  {tool['name']}{alias}  {one_line(tool['description'], 100)}")
        parameters = tool["parameters"]
        required = set(parameters.get("required") or [])
        for name, schema in (parameters.get("properties") or {}).items():
            kind = schema.get("type", "any") if isinstance(schema, dict) else "any"
            mark = "*" if name in required else ""
            text = schema.get("description", "") if isinstance(schema, dict) else ""
            print(f"      {name}{mark}: {kind}  {one_line(str(text), 80)}".rstrip())


# -- mcp call --------------------------------------------------------------------------------


def _cmd_call(args: argparse.Namespace) -> int:
    from agent_core.wire.arguments import json_problem

    raw = text_or_file(args.arguments)
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CliError(f"arguments are not valid JSON ({json_problem(exc)})") from None
    if not isinstance(arguments, dict):
        raise CliError('arguments must be a JSON object, e.g. \'{"timezone": "UTC"}\'')
    outcome: dict[str, Any] = {}

    async def body(session: McpSession) -> None:
        toolset = session.toolsets[0]
        names = toolset.tool_names()
        offered = next((o for o, n in names.items() if n == args.tool), args.tool)
        # A tool the server does not list is still sent: how it answers is worth seeing.
        original = names.get(offered, args.tool)
        if original not in names.values():
            print(f"note: server '{args.server}' does not list '{args.tool}'", file=sys.stderr)
        result = await session.call_tool(toolset, original, arguments, raw)
        outcome.update(ok=result.ok, text=result.text, error=result.error, meta=result.meta)

    code = _recorded(args, f"mcp call {args.server} {args.tool}", [args.server], body)
    if args.json:
        print_json(outcome)
    else:
        print(outcome.get("text", ""))
    return code


# -- conformance driver ----------------------------------------------------------------------


def _cmd_conformance(args: argparse.Namespace) -> int:
    import asyncio

    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO") or "(none)"
    print(f"mcp-conformance: scenario {scenario}, server {args.url}", file=sys.stderr)
    return asyncio.run(_conformance_client(args.url, args.timeout))


async def _conformance_client(url: str, timeout_s: float) -> int:
    from agent_core.mcp_client import HttpServerConfig, McpCallError, connect
    from agent_core.mcp_tools import McpStartError

    def show(direction: str, frame: dict[str, Any]) -> None:
        print(f"{direction} {json.dumps(frame, ensure_ascii=False)}", file=sys.stderr)

    failures = 0
    server = HttpServerConfig("conformance", url)
    try:
        async with connect(
            server, show, startup_timeout_s=timeout_s, accept_elicitation=True
        ) as connection:
            for tool in list(connection.tools):
                name = str(tool.get("name"))
                arguments = example_arguments(tool.get("inputSchema") or {})
                try:
                    result = await connection.call_tool(name, arguments, timeout_s)
                except McpCallError as exc:
                    failures += 1
                    print(f"{name}: error: {exc}", file=sys.stderr)
                    continue
                print(f"{name}: {json.dumps(result, ensure_ascii=False)[:300]}")
    except McpStartError as exc:
        raise CliError(str(exc), ExitCode.FAILED) from None
    return 1 if failures else 0


_EXAMPLES: dict[str, Any] = {
    "integer": 1,
    "number": 1,
    "string": "test",
    "boolean": True,
    "array": [],
    "object": {},
}


def example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for every required property: its default, first enum value or a plain value."""
    properties = schema.get("properties") or {}
    arguments: dict[str, Any] = {}
    for name in schema.get("required") or []:
        found = properties.get(name)
        spec: dict[str, Any] = found if isinstance(found, dict) else {}
        if "default" in spec:
            arguments[name] = spec["default"]
        elif spec.get("enum"):
            arguments[name] = spec["enum"][0]
        else:
            kind = spec.get("type")
            arguments[name] = _EXAMPLES.get(kind if isinstance(kind, str) else "string", "test")
    return arguments
