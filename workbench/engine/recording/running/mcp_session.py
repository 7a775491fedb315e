"""MCP sessions recorded as runs: `workbench mcp list` and `mcp call` debug servers without
a model, and each session is a run trace like `workbench run` writes (run_start with origin
`mcp_session`, every JSON-RPC frame as mcp_message, tool_start/tool_end for a call, run_end),
so the frames can be read back with `workbench show` or in the TUI.

The trace is opened by `traces.home.open_run_trace`, the one opener, with the servers'
secrets redacted. Nothing drains the recorder's outbox here, so it keeps none: a long
session's events go to the file only. The mcp SDK loads only when a session starts; the
CLI imports this module only in the MCP commands.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traces.events import RunEnd, RunStart, RunStatus, ToolEnd, ToolStart
from traces.home import open_run_trace
from traces.recorder import Recorder
from traces.totals import RunningTotals
from workbench.engine.recording.running.service import SetupError

if TYPE_CHECKING:
    from agent_core.mcp_tools import McpToolset
    from agent_core.tools.base import ToolResult
    from traces.writer import JsonlWriter


@dataclass
class McpSession:
    """An open session: its servers' toolsets, its recorder and how it is going."""

    toolsets: list[McpToolset]
    recorder: Recorder
    writer: JsonlWriter  # its `failure` says when the trace could not be written whole
    status: RunStatus = "completed"
    reason: str = ""
    counted: RunningTotals = field(default_factory=RunningTotals)
    _calls: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "completed" and not self.counted.tool_errors

    async def call_tool(
        self, toolset: McpToolset, tool: str, arguments: dict[str, Any], raw: str
    ) -> ToolResult:
        """Call `tool` (the server's own name, listed or not) and record the call as a turn
        of its own; a failed call makes the session end as `error`."""
        offered = {original: name for name, original in toolset.tool_names().items()}
        name = offered.get(tool, tool)
        self._calls += 1
        call_id = f"cli-call-{self._calls}"
        recorder = self.recorder
        recorder.turn = self._calls
        recorder.emit(
            ToolStart,
            call_id=call_id,
            name=name,
            arguments_raw=raw,
            arguments=arguments,
            source=toolset.source,
        )
        started = time.perf_counter()
        result = await toolset.call_server_tool(tool, arguments)
        recorder.emit(
            ToolEnd,
            call_id=call_id,
            name=name,
            ok=result.ok,
            result=result.text,
            error=result.error,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
        )
        recorder.turn = None
        self.counted.add_tool_call(result.ok)
        which = f"tool {tool!r} of MCP server '{toolset.server}'"
        self.reason = f"{which} answered"
        if not result.ok:
            self.status, self.reason = "error", f"{which} failed: {result.text}"
        return result


SessionBody = Callable[[McpSession], Awaitable[None]]


def record_session(
    home: Path,
    config_path: Path,
    task: str,
    body: SessionBody,
    *,
    servers: list[str] | None = None,
    tool_timeout_s: float = 30.0,
    startup_timeout_s: float = 10.0,
    on_trace: Callable[[Path], None] | None = None,
) -> McpSession:
    """Start the configured servers (or only `servers`) inside a recorded run, run `body`
    and end the run; `on_trace` gets the trace's path, also when the session fails.
    Raises SetupError with one line for a bad config or a server that cannot start; Ctrl-C
    ends the run as `cancelled` and propagates."""
    from agent_core.agent import new_run_id
    from agent_core.mcp_tools import (
        McpConfigError,
        McpStartError,
        load_mcp_config,
        mcp_secrets,
        open_mcp_toolsets,
    )

    try:
        configs = load_mcp_config(config_path)
    except McpConfigError as exc:
        raise SetupError(str(exc)) from None
    known = [config.name for config in configs]
    for name in servers or ():
        if name not in known:
            raise SetupError(
                f"{config_path}: no server named '{name}' (servers: {', '.join(known)})"
            )
    run_id = new_run_id()
    writer = open_run_trace(home, run_id, mcp_secrets(configs))
    recorder = Recorder(run_id, [writer], outbox=False)
    recorder.emit(
        RunStart,
        task=task,
        model="none",
        meta={"mcp_config": str(config_path)},
        origin="mcp_session",
    )
    started = time.perf_counter()
    session = McpSession([], recorder, writer, status="error")

    async def run() -> None:
        async with open_mcp_toolsets(
            config_path,
            recorder,
            tool_timeout_s=tool_timeout_s,
            startup_timeout_s=startup_timeout_s,
            servers=servers,
        ) as toolsets:
            session.toolsets, session.status = toolsets, "completed"
            await body(session)

    try:
        asyncio.run(run())
    except (McpConfigError, McpStartError) as exc:
        session.reason = str(exc)
        raise SetupError(session.reason) from None
    except KeyboardInterrupt:
        session.status, session.reason = "cancelled", "interrupted"
        raise
    finally:
        duration_ms = round((time.perf_counter() - started) * 1000, 3)
        recorder.emit(
            RunEnd,
            turn=None,
            status=session.status,
            reason=session.reason,
            totals=session.counted.totals(duration_ms),
        )
        recorder.close()
        if on_trace is not None:
            on_trace(writer.path)
    return session
