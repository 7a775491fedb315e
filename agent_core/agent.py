"""The public face of the agent core: configure a run, stream its events, get its result.

    agent = Agent(model, [builtin_tools(root)], AgentConfig(task="..."), sinks=[writer])
    async for item in agent.run_stream():   # trace events and TextDelta items, in order
        ...
    result = agent.result

The CLI printer, the JSONL sink and the TUI all consume this one stream. The workbench
engine drives the same loop for replay and forks by passing wrapper models and toolsets.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from agent_core.loop import run_loop
from agent_core.model.base import ChatModel, ModelHook, TextDelta
from agent_core.run_types import AgentConfig, Hooks, RunResult, new_run_id
from agent_core.tools.base import ToolHook, ToolInvocation, Toolset
from traces.events import Event
from traces.recorder import Recorder
from traces.writer import Sink

__all__ = [
    "Agent",
    "AgentConfig",
    "Hooks",
    "ModelHook",
    "RunResult",
    "TextDelta",
    "ToolHook",
    "ToolInvocation",
    "new_run_id",
]


class Agent:
    def __init__(
        self,
        model: ChatModel,
        toolsets: list[Toolset],
        config: AgentConfig,
        *,
        sinks: Sequence[Sink] | None = None,
        hooks: Hooks | None = None,
    ) -> None:
        self.model = model
        self.toolsets = toolsets
        self.config = config
        self.sinks = list(sinks or [])
        self.hooks = hooks or Hooks()
        self.result: RunResult | None = None
        # Created here so that toolsets opened before the run (MCP servers) can record
        # their frames into the same trace; they are written after run_start.
        self.recorder = Recorder(config.run_id, list(self.sinks), run_start_first=True)

    def run_stream(self) -> AsyncIterator[Event | TextDelta]:
        """Run the ReAct loop, yielding every trace event and text delta as it happens.

        Sets `self.result` before the stream ends, also when the run is cancelled.
        """
        self.result = None
        return run_loop(self)

    async def run(self) -> RunResult:
        async for _ in self.run_stream():
            pass
        assert self.result is not None
        return self.result
