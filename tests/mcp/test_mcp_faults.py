"""Every fault a server can show becomes a tool error result or a clear start error; nothing
hangs and no child process outlives the toolsets. The faults come from
tests/mcp/servers/fault_server.py, a real subprocess speaking the wire format directly."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from agent_core.mcp_tools import McpStartError, open_mcp_toolsets
from tests.mcp.mcp_support import (
    child_pids,
    fault,
    frames,
    gone,
    methods,
    new_recorder,
    write_config,
)


async def test_unknown_tool_as_json_rpc_error_and_as_is_error_result(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"rpc": fault(), "result": fault("--unknown-as-result")})
    recorder, sink = new_recorder()
    async with open_mcp_toolsets(config, recorder) as (rpc, result):
        as_error = await rpc.call_server_tool("nope", {})
        assert not as_error.ok and as_error.error == "mcp_rpc_error"
        assert as_error.text == "Error: Unknown tool: nope (JSON-RPC error -32602)"
        as_result = await result.call_server_tool("nope", {})
        assert not as_result.ok and as_result.error == "mcp_tool_error"
        assert as_result.text == "Error: Tool nope not found"
        offered = await rpc.call("not_offered", {}, "c1")  # never reaches the server
        assert not offered.ok and offered.error == "unknown_tool" and "(tools: " in offered.text
    assert methods(sink, "send", "rpc").count("tools/call") == 1


async def test_arguments_failing_the_server_schema(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"calc": fault()})
    recorder, _ = new_recorder()
    async with open_mcp_toolsets(config, recorder) as (toolset,):
        good = await toolset.call("add", {"a": 2, "b": 3}, "c1")
        assert good.ok and good.text == "5" and good.meta["structured_content"] == {"sum": 5}
        bad = await toolset.call("add", {"a": "two", "b": 3}, "c2")
        assert not bad.ok and "a and b must be numbers" in bad.text


async def test_server_that_crashes_mid_call(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"flaky": fault()})
    recorder, _ = new_recorder()
    before = child_pids()
    async with open_mcp_toolsets(config, recorder, tool_timeout_s=10) as (toolset,):
        (pid,) = child_pids() - before
        with anyio.fail_after(5):
            crashed = await toolset.call("crash", {}, "c1")
        assert not crashed.ok and crashed.error == "mcp_closed"
        assert "MCP server 'flaky' closed the connection" in crashed.text
        assert "panic: simulated crash" in crashed.text  # its stderr explains why
        later = await toolset.call("echo", {"message": "hi"}, "c2")
        assert not later.ok and "is not running" in later.text
    assert gone(pid)


async def test_hanging_tool_times_out_and_the_server_is_reaped(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"slowpoke": fault()})
    recorder, sink = new_recorder()
    before = child_pids()
    with anyio.fail_after(10):
        async with open_mcp_toolsets(config, recorder, tool_timeout_s=0.5) as (toolset,):
            (pid,) = child_pids() - before
            hung = await toolset.call("hang", {}, "c1")
            assert not hung.ok and hung.meta["timeout"] is True
            assert hung.text == "Error: tool 'hang' on MCP server 'slowpoke' timed out after 0.5s"
            still = await toolset.call("echo", {"message": "after"}, "c2")
            assert still.ok  # a timeout cancels the request, not the session
    assert gone(pid)
    sent = [f.frame for f in frames(sink) if f.direction == "send"]
    hang = next(f for f in sent if f.get("params", {}).get("name") == "hang")
    cancel = next(f for f in sent if f.get("method") == "notifications/cancelled")
    assert cancel["params"]["requestId"] == hang["id"]  # the server is told to give up


async def test_stuck_server_that_ignores_stdin_is_killed_on_exit(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"stuck": fault()})
    recorder, _ = new_recorder()
    before = child_pids()
    with anyio.fail_after(15):
        async with open_mcp_toolsets(config, recorder, tool_timeout_s=0.5) as (toolset,):
            (pid,) = child_pids() - before
            result = await toolset.call("stuck", {}, "c1")
            assert not result.ok and result.meta["timeout"] is True
    assert gone(pid)


async def test_non_json_on_stdout_is_traced_and_does_not_break_the_session(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"noisy": fault()})
    recorder, sink = new_recorder()
    async with open_mcp_toolsets(config, recorder, tool_timeout_s=0.5) as (toolset,):
        answered = await toolset.call("garbage", {}, "c1")
        assert answered.ok and answered.text == "answered after garbage"
        silent = await toolset.call("babble", {}, "c2")  # non-JSON instead of an answer
        assert not silent.ok and silent.meta["timeout"] is True
        assert "non-JSON-RPC output: 'Traceback: something went wrong" in silent.text
    unparsed = [f.frame for f in frames(sink) if "_unparsed" in f.frame]
    assert [u["_unparsed"] for u in unparsed] == [
        "this is not json",
        "Traceback: something went wrong, printing to stdout",
    ]
    assert all(u["_error"].startswith("Invalid JSON") for u in unparsed)


async def test_server_that_cannot_start_names_command_and_stderr(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"ok": fault(), "broken": fault("--fail-start")})
    recorder, _ = new_recorder()
    before = child_pids()
    with pytest.raises(McpStartError) as caught:
        async with open_mcp_toolsets(config, recorder):
            pytest.fail("must not start")
    message = str(caught.value)
    assert message.startswith(f"MCP server 'broken' ({sys.executable} ")
    assert "fault_server.py --fail-start) could not start" in message
    assert "FAULT_API_KEY is not set; refusing to start" in message
    assert "\n" not in message
    assert child_pids() - before == set()  # the server that did start was stopped too


async def test_missing_command_and_silent_server(tmp_path: Path) -> None:
    missing = write_config(tmp_path, {"ghost": {"command": "no-such-mcp-server-xyz"}})
    recorder, _ = new_recorder()
    with pytest.raises(
        McpStartError,
        match=r"'ghost' \(no-such-mcp-server-xyz\) could not start: command not found",
    ):
        async with open_mcp_toolsets(missing, recorder):
            pass
    # Reads its stdin and never answers: the start timeout fires, the process is stopped.
    silent = write_config(
        tmp_path,
        {"mute": {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]}},
    )
    before = child_pids()
    with anyio.fail_after(10), pytest.raises(McpStartError, match="no answer to initialize"):
        async with open_mcp_toolsets(silent, recorder, startup_timeout_s=0.5):
            pass
    assert child_pids() - before == set()


async def test_pagination_list_changed_and_progress_are_followed(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"paged": fault("--page-size", "4")})
    recorder, sink = new_recorder()
    async with open_mcp_toolsets(config, recorder) as (toolset,):
        assert len(toolset.specs()) == 9
        cursors = [
            f.frame.get("params", {}).get("cursor")
            for f in frames(sink)
            if f.direction == "send" and f.frame.get("method") == "tools/list"
        ]
        assert cursors == [None, "4", "8"]
        grown = await toolset.call("grow", {}, "c1")
        assert grown.ok
        with anyio.fail_after(5):
            await toolset.connection.wait_tools_version(2)
        assert "extra" in {spec.name for spec in toolset.specs()}
        assert (await toolset.call("extra", {}, "c2")).text == "extra works"
        assert (await toolset.call("slow", {}, "c3")).text == "slow done"
    received = methods(sink, "recv")
    assert "notifications/tools/list_changed" in received
    assert received.count("notifications/progress") == 2


async def test_names_that_collide_across_servers_are_namespaced(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"alpha": fault(), "beta.v2": fault()})
    recorder, _ = new_recorder()
    async with open_mcp_toolsets(config, recorder, servers=None) as (alpha, beta):
        alpha_names = [spec.name for spec in alpha.specs()]
        beta_names = [spec.name for spec in beta.specs()]
        assert alpha_names[:2] == ["alpha__echo", "alpha__add"]
        assert beta_names[:2] == ["beta_v2__echo", "beta_v2__add"]
        result = await beta.call("beta_v2__echo", {"message": "hi"}, "c1")
        assert result.ok and result.text == "Echo: hi"


async def test_leaving_during_a_call_stops_the_server(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"slowpoke": fault()})
    recorder, _ = new_recorder()
    before = child_pids()
    with anyio.move_on_after(0.5):  # e.g. the run's own time limit, or Ctrl-C
        async with open_mcp_toolsets(config, recorder, tool_timeout_s=30) as (toolset,):
            pids = child_pids() - before
            await toolset.call("hang", {}, "c1")
            pytest.fail("the call should have been cancelled")
    assert pids and all(gone(pid) for pid in pids)
