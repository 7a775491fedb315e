"""A whole agent run with MCP tools: the model (scripted) picks a real server's tool, the
result reaches the model, and the trace on disk holds every JSON-RPC frame."""

from __future__ import annotations

from pathlib import Path

from agent_core.agent import Agent, AgentConfig
from agent_core.mcp_tools import open_mcp_toolsets
from agent_core.model.scripted import ScriptedModel
from tests.mcp.mcp_support import fault, time_server, write_config
from traces.events import Limits, McpMessage, ModelRequest, RunStart, ToolEnd, ToolStart
from traces.reader import read_trace
from traces.writer import JsonlWriter


async def test_model_calls_a_real_mcp_tool_and_reads_its_result(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"time": time_server()})
    model = ScriptedModel(
        [
            {
                "tool_calls": [
                    {
                        "id": "call_warsaw",
                        "name": "get_current_time",
                        "arguments": {"timezone": "Europe/Warsaw"},
                    }
                ]
            },
            {"content": "It is Monday in Warsaw.", "when_last_tool_result_contains": "Warsaw"},
        ]
    )
    agent_config = AgentConfig(task="What day is it in Warsaw?")
    writer = JsonlWriter(tmp_path / "traces", agent_config.run_id)
    agent = Agent(model, [], agent_config, sinks=[writer])
    async with open_mcp_toolsets(config, agent.recorder) as toolsets:
        agent.toolsets.extend(toolsets)
        result = await agent.run()
    writer.close()
    model.assert_done()
    assert result.status == "completed" and result.final_answer == "It is Monday in Warsaw."

    events = read_trace(writer.path).events
    assert [e.seq for e in events] == list(range(len(events)))
    start = events[0]  # the servers' handshake frames are written after it
    assert isinstance(start, RunStart) and events[1].type == "mcp_message"
    assert start.tool_sources["get_current_time"] == "mcp:time"

    requests = [e for e in events if isinstance(e, ModelRequest)]
    tool_message = next(m for m in requests[1].messages if m["role"] == "tool")
    assert tool_message["tool_call_id"] == "call_warsaw"
    assert '"timezone": "Europe/Warsaw"' in tool_message["content"]

    frames = [e for e in events if isinstance(e, McpMessage)]
    sent = [f.frame.get("method") for f in frames if f.direction == "send"]
    assert sent == ["initialize", "notifications/initialized", "tools/list", "tools/call"]
    assert sum(1 for f in frames if f.direction == "recv") == 3
    tool_start = next(e for e in events if isinstance(e, ToolStart))
    tool_end = next(e for e in events if isinstance(e, ToolEnd))
    call_frames = [f for f in frames if tool_start.seq < f.seq < tool_end.seq]
    assert [f.direction for f in call_frames] == ["send", "recv"]  # the call's own frames
    assert call_frames[0].frame["params"]["arguments"] == {"timezone": "Europe/Warsaw"}
    assert call_frames[1].frame["id"] == call_frames[0].frame["id"]
    assert {f.turn for f in call_frames} == {tool_start.turn} == {1}
    assert tool_start.source == "mcp:time" and tool_end.ok


async def test_a_hung_mcp_tool_ends_the_run_as_a_tool_timeout(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"slowpoke": fault()})
    model = ScriptedModel([{"tool_calls": [{"id": "call_1", "name": "hang", "arguments": {}}]}])
    limits = Limits(tool_timeout_s=0.5)
    agent = Agent(model, [], AgentConfig(task="wait", limits=limits))
    async with open_mcp_toolsets(config, agent.recorder, tool_timeout_s=0.5) as toolsets:
        agent.toolsets.extend(toolsets)
        result = await agent.run()
    assert result.status == "timeout" and result.timeout_layer == "tool"
