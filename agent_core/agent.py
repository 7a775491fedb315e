"""The public face of the agent core: configure a run, stream its events, get its result.

    agent = Agent(model, [BuiltinTools(root)], AgentConfig(task="..."), sinks=[writer])
    async for item in agent.run_stream():   # trace events and TextDelta items, in order
        ...
    result = agent.result

The CLI printer, the JSONL sink and the TUI all consume this one stream. The workbench
engine drives the same loop for replay and forks by passing wrapper models and toolsets.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_core.model.base import ChatModel, ModelCall, StreamItem
from agent_core.tools.base import ToolResult, Toolset
from traces.events import Edit, Event, Limits, RunOrigin, RunStatus, TimeoutLayer, Totals
from traces.recorder import Recorder
from traces.writer import Sink


def new_run_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class TextDelta:
    """Visible model text as it streams; shown live, not recorded (chunks are)."""

    turn: int
    text: str


@dataclass
class AgentConfig:
    task: str
    system_prompt: str | None = None
    limits: Limits = field(default_factory=Limits)
    params: dict[str, Any] = field(default_factory=dict)
    stream: bool = True
    run_id: str = field(default_factory=new_run_id)
    offer_reasoning: bool = False  # add the optional `reasoning` argument to every tool
    tool_descriptions: dict[str, str] = field(default_factory=dict)  # per-run overrides
    # Forks: the history as rebuilt up to the fork turn, and where numbering resumes.
    initial_messages: list[dict[str, Any]] | None = None
    start_turn: int = 1
    parent_run_id: str | None = None
    fork_turn: int | None = None
    edits: list[Edit] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    origin: RunOrigin = "agent"  # recorded in run_start: who started this run


@dataclass(frozen=True)
class RunResult:
    run_id: str
    status: RunStatus
    final_answer: str | None
    reason: str
    timeout_layer: TimeoutLayer | None
    totals: Totals
    messages: list[dict[str, Any]]


@dataclass(frozen=True)
class ToolInvocation:
    call_id: str
    name: str
    arguments: dict[str, Any]
    turn: int


# Hooks wrap the model call and the tool call (authorisation, approval, mocking, replay).
# Each receives the request and the next callable, and returns what the next one would.
ModelHook = Callable[
    [ModelCall, Callable[[ModelCall], AsyncIterator[StreamItem]]], AsyncIterator[StreamItem]
]
ToolHook = Callable[
    [ToolInvocation, Callable[[ToolInvocation], Awaitable[ToolResult]]], Awaitable[ToolResult]
]


@dataclass
class Hooks:
    model: list[ModelHook] = field(default_factory=list)
    tool: list[ToolHook] = field(default_factory=list)


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
        # Imported here: the loop's modules import `TextDelta` and `ToolInvocation` from here.
        from agent_core.loop import run_loop

        self.result = None
        return run_loop(self)

    async def run(self) -> RunResult:
        async for _ in self.run_stream():
            pass
        assert self.result is not None
        return self.result
