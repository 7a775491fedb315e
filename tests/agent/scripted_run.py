"""Running the real `Agent` on a scripted model with every event kept."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_core.agent import Agent, AgentConfig, Hooks, RunResult, TextDelta
from agent_core.model.scripted import ScriptedModel
from agent_core.tools.base import Toolset
from agent_core.tools.builtin import builtin_tools
from traces.events import Event, Limits
from traces.writer import MemorySink


@dataclass
class Outcome:
    result: RunResult
    events: list[Event]
    streamed: list[Event | TextDelta]
    model: ScriptedModel

    def of(self, kind: str) -> list[Any]:
        return [event for event in self.events if event.type == kind]

    @property
    def types(self) -> list[str]:
        return [event.type for event in self.events]


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


async def run_agent(
    steps: list[dict[str, Any]],
    toolsets: list[Toolset] | None = None,
    *,
    root: Path | None = None,
    task: str = "do the task",
    hooks: Hooks | None = None,
    **config: Any,
) -> Outcome:
    limits = config.pop("limits", None) or Limits()
    model = ScriptedModel(steps)
    if toolsets is None:
        toolsets = [builtin_tools(root or Path("."))]
    sink = MemorySink()
    agent = Agent(
        model, toolsets, AgentConfig(task=task, limits=limits, **config), sinks=[sink], hooks=hooks
    )
    streamed = [item async for item in agent.run_stream()]
    assert agent.result is not None
    return Outcome(agent.result, sink.events, streamed, model)
