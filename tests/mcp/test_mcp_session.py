"""MCP sessions recorded by the engine (`workbench.engine.recording.running.mcp_session`), as
`workbench mcp list` and `mcp call` run them: through the one trace opener (the home's
redaction applies), every frame and call in the trace, no outbox kept in memory, and the
run's totals counted with the one running-totals type."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp.mcp_support import fault, write_config
from traces.events import McpMessage, RunEnd, RunStart, ToolEnd
from traces.reader import read_trace
from workbench.engine.recording.running.mcp_session import McpSession, record_session
from workbench.engine.recording.running.service import SetupError


def test_a_long_session_keeps_no_outbox_and_counts_its_calls(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fault": fault()})
    home = tmp_path / "home"
    (home).mkdir()
    (home / "redact-patterns.txt").write_text("CUST-\\d{6}\n", encoding="utf-8")
    traces: list[Path] = []
    held: list[int] = []

    async def body(session: McpSession) -> None:
        (toolset,) = session.toolsets
        for number in range(50):
            await session.call_tool(toolset, "echo", {"message": f"CUST-{number:06d}"}, "{}")
            held.append(len(session.recorder.drain()))
        await session.call_tool(toolset, "add", {"a": "x", "b": 1}, "{}")

    session = record_session(home, config, "a long session", body, on_trace=traces.append)

    assert held == [0] * 50  # nothing reads the outbox, so nothing is kept there
    (path,) = traces
    events = read_trace(path).events
    assert isinstance(events[0], RunStart) and events[0].origin == "mcp_session"
    end = events[-1]
    assert isinstance(end, RunEnd) and end.status == "error"
    assert (end.totals.tool_calls, end.totals.tool_errors) == (51, 1)
    assert session.counted.tool_calls == 51 and not session.ok
    assert sum(isinstance(e, ToolEnd) for e in events) == 51
    assert sum(isinstance(e, McpMessage) for e in events) > 100
    assert "CUST-0000" not in path.read_text(encoding="utf-8")  # the home's redaction


def test_an_unknown_server_is_one_line_and_writes_no_trace(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fault": fault()})

    async def body(session: McpSession) -> None:
        raise AssertionError("not reached")

    with pytest.raises(SetupError, match="no server named 'nope' \\(servers: fault\\)"):
        record_session(tmp_path / "home", config, "t", body, servers=["nope"])
    assert not (tmp_path / "home" / "traces").exists()
