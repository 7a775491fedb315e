"""The types the agent and its loop share: the run's configuration, its result, the hooks,
and what the loop needs of the agent.

Below both (it imports only the model and tool protocols and the trace contract), so
`agent_core.agent` imports the loop and the loop never imports the agent back. The model
and tool types the hooks wrap live with them (`model.base`, `tools.base`).
`agent_core.agent` re-exports the public names; import them from there.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_core.model.base import ChatModel, ModelHook
from agent_core.tools.base import ToolHook, Toolset
from agent_core.wire.spans import WireSpan
from traces.events import Edit, Limits, RunOrigin, RunStatus, TimeoutLayer, Totals
from traces.recorder import Recorder


def new_run_id() -> str:
    return uuid.uuid4().hex


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
    # ... and that history as its client sent it, in its wire format (`wire.spans`).
    initial_wire: list[WireSpan] = field(default_factory=list)
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


@dataclass
class Hooks:
    """Wrappers around the model call and the tool call (authorisation, approval, mocking,
    replay); `model[0]` and `tool[0]` are the outermost."""

    model: list[ModelHook] = field(default_factory=list)
    tool: list[ToolHook] = field(default_factory=list)


class RunHost(Protocol):
    """What the loop needs of the agent that runs it (`agent_core.agent.Agent`)."""

    model: ChatModel
    toolsets: list[Toolset]
    config: AgentConfig
    hooks: Hooks
    recorder: Recorder
    result: RunResult | None
