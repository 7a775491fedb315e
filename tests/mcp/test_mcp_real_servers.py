"""The reference servers, unmodified, as real subprocesses: mcp-server-time over stdio and
server-everything over stdio and streamable HTTP. Expectations follow the recorded exchanges
in tests/mcp/fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from agent_core.mcp_tools import open_mcp_toolsets
from tests.mcp.mcp_support import (
    HttpServerProcess,
    child_pids,
    everything_stdio,
    frames,
    gone,
    methods,
    new_recorder,
    time_server,
    write_config,
)


async def test_time_server_tools_calls_errors_and_every_frame(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"time": time_server()})
    recorder, sink = new_recorder()
    before = child_pids()
    async with open_mcp_toolsets(config, recorder, tool_timeout_s=10) as toolsets:
        started = child_pids() - before
        (toolset,) = toolsets
        specs = {spec.name: spec for spec in toolset.specs()}
        assert sorted(specs) == ["convert_time", "get_current_time"]
        spec = specs["get_current_time"]
        assert spec.source == "mcp:time" and spec.read_only
        assert spec.description == "Get current time in a specific timezone"
        assert "title" not in json.dumps(spec.parameters)
        assert spec.parameters["required"] == ["timezone"]

        recorder.turn = 3
        ok = await toolset.call("get_current_time", {"timezone": "Europe/Warsaw"}, "c1")
        assert ok.ok and '"timezone": "Europe/Warsaw"' in ok.text
        unknown = await toolset.call_server_tool("no_such_tool", {})  # a JSON-RPC error
        assert not unknown.ok and unknown.text == (
            "Error: Unknown tool: no_such_tool (JSON-RPC error -32602)"
        )
        missing = await toolset.call("get_current_time", {}, "c2")  # fails the server's schema
        assert not missing.ok and "Field required" in missing.text
        wrong = await toolset.call("get_current_time", {"timezone": "Mars/Olympus_Mons"}, "c3")
        assert not wrong.ok and "Invalid timezone" in wrong.text
    assert started and all(gone(pid) for pid in started)

    assert methods(sink, "send") == [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
        "tools/call",
        "tools/call",
        "tools/call",
    ]
    received = frames(sink)
    assert sum(1 for f in received if f.direction == "recv") == 6  # one answer per request
    assert {f.turn for f in received if f.frame.get("method") == "tools/call"} == {3}
    assert received[0].turn is None  # the handshake happens outside any turn
    error = next(f.frame for f in received if "error" in f.frame)
    assert error["error"] == {"code": -32602, "message": "Unknown tool: no_such_tool"}


async def test_everything_stdio_list_changed_images_progress(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"everything": everything_stdio()})
    recorder, sink = new_recorder()
    async with open_mcp_toolsets(config, recorder, tool_timeout_s=10) as toolsets:
        (toolset,) = toolsets
        with anyio.fail_after(10):  # it announces a tool added after initialization
            await toolset.connection.wait_tools_version(2)
        names = {spec.name for spec in toolset.specs()}
        assert {"echo", "get-sum", "simulate-research-query"} <= names
        echo = next(s for s in toolset.specs() if s.name == "echo")
        assert "$schema" not in echo.parameters and echo.description == (
            "Echoes back the input string"
        )

        assert (await toolset.call("echo", {"message": "hello"}, "c1")).text == "Echo: hello"
        image = await toolset.call("get-tiny-image", {}, "c2")
        assert image.ok and "[image image/png," in image.text
        slow = await toolset.call(
            "trigger-long-running-operation", {"duration": 0.2, "steps": 2}, "c3"
        )
        assert slow.ok, slow.text
        unknown = await toolset.call_server_tool("no_such_tool", {})  # an isError result
        assert not unknown.ok and "Tool no_such_tool not found" in unknown.text
        bad = await toolset.call("get-sum", {"a": "two", "b": 3}, "c4")
        assert not bad.ok and "Input validation error" in bad.text

    received = methods(sink, "recv")
    assert "notifications/tools/list_changed" in received
    assert received.count("notifications/progress") == 2
    assert methods(sink, "send").count("tools/list") >= 2


async def test_everything_over_streamable_http(
    tmp_path: Path, everything_http: HttpServerProcess
) -> None:
    config = write_config(tmp_path, {"web": {"url": everything_http.url}})
    recorder, sink = new_recorder()
    async with open_mcp_toolsets(config, recorder, tool_timeout_s=10) as toolsets:
        (toolset,) = toolsets
        # Over HTTP the list_changed goes out before any stream can carry it; the listing
        # that follows the handshake already has the added tool.
        names = {spec.name for spec in toolset.specs()}
        assert {"echo", "simulate-research-query"} <= names
        assert toolset.source == "mcp:web"
        result = await toolset.call("echo", {"message": "hello over http"}, "c1")
        assert result.ok and result.text == "Echo: hello over http"
        unknown = await toolset.call_server_tool("no_such_tool", {})
        assert not unknown.ok and "Tool no_such_tool not found" in unknown.text
    assert methods(sink, "send")[:3] == ["initialize", "notifications/initialized", "tools/list"]
    answers = [f.frame for f in frames(sink) if f.direction == "recv" and "result" in f.frame]
    assert answers[0]["result"]["serverInfo"]["name"] == "mcp-servers/everything"
    assert {"content": [{"type": "text", "text": "Echo: hello over http"}]} in [
        a["result"] for a in answers
    ]


async def test_http_server_that_dies_mid_run_gives_tool_errors(
    tmp_path: Path, everything_http: HttpServerProcess
) -> None:
    config = write_config(tmp_path, {"web": {"url": everything_http.url}})
    recorder, _ = new_recorder()
    async with open_mcp_toolsets(config, recorder, tool_timeout_s=5) as toolsets:
        (toolset,) = toolsets
        everything_http.process.kill()  # the way a crash would end it
        everything_http.process.wait(10)
        first = await toolset.call("echo", {"message": "anyone?"}, "c1")
        assert not first.ok and first.text.startswith("Error: MCP server 'web'"), first
        again = await toolset.call("echo", {"message": "still there?"}, "c2")
        assert not again.ok and again.text.startswith("Error: MCP server 'web'"), again
