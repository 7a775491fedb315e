"""A small MCP server over stdio, written against the wire format directly so that it can
misbehave on purpose: each tool is one fault a real server shows sooner or later.

    python fault_server.py [--fail-start] [--unknown-as-result] [--page-size N]

Tools: echo, add (rejects non-numbers as JSON-RPC invalid params), crash (exits mid-call),
hang (never answers, exits when stdin closes), stuck (blocks, ignoring stdin), garbage
(prints a non-JSON line, then answers), babble (prints a non-JSON line instead of an answer),
slow (progress notifications, then an answer), grow (adds a tool, announces list_changed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

TOOLS = [
    {
        "name": "echo",
        "title": "Echo",
        "description": "Echoes the message back.",
        "inputSchema": {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "title": "echoArguments",
            "properties": {"message": {"type": "string", "title": "Message"}},
            "required": ["message"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "add",
        "description": "Adds two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
    *(
        {"name": name, "description": text, "inputSchema": {"type": "object"}}
        for name, text in [
            ("crash", "Exits while answering."),
            ("hang", "Never answers."),
            ("stuck", "Blocks and stops reading its input."),
            ("garbage", "Prints a line that is not JSON, then answers."),
            ("babble", "Prints a line that is not JSON instead of answering."),
            ("slow", "Reports progress, then answers."),
            ("grow", "Adds the tool 'extra' and announces the new list."),
        ]
    ),
]
EXTRA = {"name": "extra", "description": "Added after start.", "inputSchema": {"type": "object"}}


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text_result(request_id: object, text: str, is_error: bool = False) -> None:
    result: dict = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def error(request_id: object, code: int, message: str) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def call_tool(request_id: object, params: dict, options: argparse.Namespace) -> None:
    name = params.get("name")
    arguments = params.get("arguments") or {}
    token = (params.get("_meta") or {}).get("progressToken")
    if name == "echo":
        text_result(request_id, f"Echo: {arguments.get('message')}")
    elif name == "add":
        a, b = arguments.get("a"), arguments.get("b")
        if not (isinstance(a, int | float) and isinstance(b, int | float)):
            error(request_id, -32602, "Invalid params: a and b must be numbers")
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {
                        "content": [{"type": "text", "text": str(a + b)}],
                        "structuredContent": {"sum": a + b},
                    },
                }
            )
    elif name == "crash":
        sys.stderr.write("panic: simulated crash in tool 'crash'\n")
        sys.stderr.flush()
        os._exit(3)
    elif name == "hang":
        pass
    elif name == "stuck":
        time.sleep(3600)
    elif name == "garbage":
        sys.stdout.write("this is not json\n")
        text_result(request_id, "answered after garbage")
    elif name == "babble":
        sys.stdout.write("Traceback: something went wrong, printing to stdout\n")
        sys.stdout.flush()
    elif name == "slow":
        for step in (1, 2):
            if token is not None:
                send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": step, "total": 2},
                    }
                )
        text_result(request_id, "slow done")
    elif name == "grow":
        if EXTRA not in TOOLS:
            TOOLS.append(EXTRA)
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        text_result(request_id, "added 'extra'")
    elif name == "extra":
        text_result(request_id, "extra works")
    elif options.unknown_as_result:
        text_result(request_id, f"Tool {name} not found", is_error=True)
    else:
        error(request_id, -32602, f"Unknown tool: {name}")


def list_tools(request_id: object, params: dict, page_size: int) -> None:
    start = int((params or {}).get("cursor") or 0)
    page = TOOLS[start : start + page_size]
    result: dict = {"tools": page}
    if start + page_size < len(TOOLS):
        result["nextCursor"] = str(start + page_size)
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail-start", action="store_true")
    parser.add_argument("--unknown-as-result", action="store_true")
    parser.add_argument("--page-size", type=int, default=100)
    options = parser.parse_args()
    if options.fail_start:
        sys.stderr.write("fault_server: FAULT_API_KEY is not set; refusing to start\n")
        return 2
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {
                        "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                        "capabilities": {"tools": {"listChanged": True}},
                        "serverInfo": {"name": "fault-server", "version": "1.0.0"},
                    },
                }
            )
        elif method == "tools/list":
            list_tools(request_id, params, options.page_size)
        elif method == "tools/call":
            call_tool(request_id, params, options)
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif request_id is not None:
            error(request_id, -32601, "Method not found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
