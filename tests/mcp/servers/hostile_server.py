"""An MCP server over stdio that misbehaves in the ways hostile or broken servers do, each
behind a flag, speaking the wire format directly:

    python hostile_server.py [--noise] [--bad-utf8] [--silent] [--endless-pages]

--noise          prints lines that are not JSON before and between its answers
--bad-utf8       prints a line of invalid UTF-8 before each answer
--silent         never answers initialize (it reads and ignores its input)
--endless-pages  tools/list always has a next page, listing the same tool again

Tools: echo; deep (a valid result nested 10,000 levels deep); spawn (starts `sleep 300`
in its process group and answers with the sleeper's pid; the server itself exits as soon as
its input closes, leaving the sleeper behind unless the client ends the group).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

TOOLS = [
    {"name": name, "description": text, "inputSchema": {"type": "object"}}
    for name, text in [
        ("echo", "Echoes the message back."),
        ("deep", "Answers with a result nested 10,000 levels deep."),
        ("spawn", "Starts a long sleep in the background and answers with its pid."),
    ]
]


def write(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def send(message: dict, options: argparse.Namespace) -> None:
    if options.noise:
        write(b"[hostile] starting answer ...\n")
    if options.bad_utf8:
        write(b"\xff\xfe not utf-8 \xc3\x28\n")
    write(json.dumps(message).encode() + b"\n")


def answer(request_id: object, params: dict, options: argparse.Namespace) -> None:
    name = params.get("name")
    if name == "deep":
        depth = 10_000
        nested = "[" * depth + "]" * depth
        head = f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "result": '
        write(f'{head}{{"content": [], "structuredContent": {{"x": {nested}}}}}}}\n'.encode())
        return
    if name == "spawn":
        sleeper = subprocess.Popen(["sleep", "300"])  # stays in this process group
        text = str(sleeper.pid)
    else:
        text = f"Echo: {(params.get('arguments') or {}).get('message')}"
    result = {"content": [{"type": "text", "text": text}]}
    send({"jsonrpc": "2.0", "id": request_id, "result": result}, options)


def main() -> int:
    parser = argparse.ArgumentParser()
    for flag in ("--noise", "--bad-utf8", "--silent", "--endless-pages"):
        parser.add_argument(flag, action="store_true")
    options = parser.parse_args()
    page = 0
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if options.silent or request_id is None:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result}, options)
        elif method == "tools/list":
            page += 1
            result = {"tools": TOOLS}
            if options.endless_pages:
                result["nextCursor"] = f"page-{page}"
            send({"jsonrpc": "2.0", "id": request_id, "result": result}, options)
        elif method == "tools/call":
            answer(request_id, message.get("params") or {}, options)
        else:
            send({"jsonrpc": "2.0", "id": request_id, "result": {}}, options)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
