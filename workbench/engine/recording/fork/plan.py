"""Fork a recorded run at turn N: rebuild its history, apply edits, continue live.

    plan = plan_fork(parent, ForkRequest(turn=3, mocks={"call_7": "no such file"}))
    agent = fork_agent(plan, model, live_toolsets=[builtin_tools(root)], sinks=[writer])
    async for item in agent.run_stream(): ...

The history at the start of turn N is the exact message list the parent sent in turn N, so
turns before N are never sent to a model again. Edits change that history (system prompt,
last user message, a tool result) or the tools offered (description, parameter schema).
In the fork, each tool's side-effect policy (`recording.fork.tool_policy`) decides its calls: by
default a call the parent already made with the same arguments gets the recorded result
back, and a new call runs live only when the tool is read-only; otherwise the model reads a
refusal. The fork is a new run whose run_start names the parent, the fork turn, every edit
and each tool's policy.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_core.agent import Agent, AgentConfig, Hooks
from agent_core.model.base import ChatModel, ModelCall, ModelCallStopped, StreamItem
from agent_core.tools.base import CallKey, ToolResult, Toolset, ToolSpec, call_key
from agent_core.wire.answer import function_call
from agent_core.wire.chat import FINAL_ANSWER_TOOLS, final_answer
from agent_core.wire.codecs import codec_for
from traces.events import Edit, ModelApi, RunStart
from traces.writer import Sink
from workbench.engine.recording.fork.tool_policy import (
    META_KEY,
    Decision,
    ToolPolicy,
    apply,
    decide_all,
    record,
)
from workbench.engine.recording.fork.tool_policy import (
    REFUSED as REFUSED,  # what a refused call's tool_end says; tests and front ends read it
)
from workbench.engine.recording.replay.model import (
    recorded_read_only,
    recorded_specs,
    served_result,
)
from workbench.engine.recording.runs.load import Recording, config_from_run_start
from workbench.engine.recording.runs.parent import ParentRun, as_parent

if TYPE_CHECKING:
    from workbench.engine.recording.running.service import ModelSettings

# A call to a tool that only the recorded client could run (a captured or imported run),
# with arguments the recording has no result for: the fork cannot go on without a mock.
NOT_RECORDED = "not_recorded"
# Runs whose tools ran in the client, not here: their tools never run live in a fork.
OBSERVED_ORIGINS = frozenset({"captured", "imported"})


class ForkError(Exception):
    """A fork request that does not fit the recording; one line saying what to fix."""


@dataclass
class ForkRequest:
    turn: int
    system: str | None = None
    user: str | None = None
    tool_descriptions: dict[str, str] = field(default_factory=dict)
    tool_schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    mocks: dict[str, str] = field(default_factory=dict)  # recorded tool call id -> result
    allow_side_effects: bool = False  # shorthand for `*=live` when `policy` is not given
    policy: ToolPolicy | None = None  # each tool's side-effect policy (`tool_policy`)


@dataclass
class ForkPlan:
    parent: ParentRun
    turn: int
    messages: list[dict[str, Any]]  # the history sent as turn N, edits applied
    specs: list[ToolSpec]  # the tools offered, edits applied
    edits: list[Edit]
    mocks: dict[str, str]
    policy: ToolPolicy
    task: str
    system_prompt: str | None

    def config(self, **overrides: Any) -> AgentConfig:
        start = self.parent.run_start
        sent = self.parent.request(self.turn)
        changes: dict[str, Any] = {
            "task": self.task,
            "system_prompt": self.system_prompt,
            "initial_messages": [dict(m) for m in self.messages],
            # What the client sent at the fork turn goes again as it sent it; only messages
            # an edit changed are written anew.
            "initial_wire": codec_for(sent.api).spans(sent.body) if sent and sent.body else [],
            "start_turn": self.turn,
            "parent_run_id": self.parent.run_id,
            "fork_turn": self.turn,
            "edits": list(self.edits),
            "origin": "fork",
            # The loop records the fork's own read-only flags; the parent's may differ.
            "meta": {k: v for k, v in start.meta.items() if k != "read_only_tools"},
        }
        config = config_from_run_start(start, sent, **(changes | overrides))
        # The fork offers every tool the parent was offered: the parent's offer is already
        # the agent core's choice under its cap (`max_tools`), and a client that offered more
        # (a captured Claude Code run: 12) was never under that cap.
        if config.limits.max_tools < len(self.specs):
            config.limits = config.limits.model_copy(update={"max_tools": len(self.specs)})
        return config


def recorded_root(start: RunStart) -> Path | None:
    """The folder the parent run's file tools read (`run_start.meta.root`), when it still
    exists: new file-tool calls in a fork run there, wherever the fork is started from."""
    root = start.meta.get("root")
    if not isinstance(root, str) or not root:
        return None
    path = Path(root)
    return path if path.is_dir() else None


def offline_fork_script(start: RunStart) -> Path | None:
    """The model script a recorded run names for forking it offline
    (`run_start.meta.fork_script`, which `workbench demo` records), when the file exists."""
    script = start.meta.get("fork_script")
    if not isinstance(script, str) or not script:
        return None
    path = Path(script)
    return path if path.is_file() else None


def mockable_call_ids(messages: list[dict[str, Any]]) -> list[str]:
    return [
        str(m["tool_call_id"]) for m in messages if m.get("role") == "tool" and "tool_call_id" in m
    ]


def offline_model(settings: ModelSettings, start: RunStart) -> Path | None:
    """The run's offline fork script, when `settings` choose no model (neither a script nor
    a model name): the demo's runs then fork with no network, from the CLI and the TUI."""
    if settings.script is not None or settings.model:
        return None
    return offline_fork_script(start)


@dataclass(frozen=True)
class RecordedCall:
    """A tool call made before the fork turn, whose recorded result a fork may mock."""

    turn: int
    call_id: str
    name: str
    arguments: str
    result: str


@dataclass(frozen=True)
class ForkContext:
    """What a fork at `turn` starts from: the history the parent sent then, its tools'
    descriptions and the calls whose results can be mocked."""

    run_id: str
    turn: int
    turns: list[int]  # the turns a fork can start at
    system: str | None
    user: str | None  # the last user message, when it is text
    tools: dict[str, str]  # name -> description
    calls: list[RecordedCall]
    # The run's offline model script, when the chosen settings name no model (`offline_model`).
    fork_script: Path | None = None
    # The parent's wire format: a fork speaks it unless its settings choose another.
    api: ModelApi = "chat"


def fork_context(run: Recording | ParentRun, turn: int, settings: ModelSettings) -> ForkContext:
    """The history `run` sent at `turn` (empty when no model call was made then); of the
    other turns only the calls whose results that history holds are read."""
    parent = as_parent(run)
    messages = parent.history(turn)
    system = next((m.get("content") for m in messages if m.get("role") == "system"), None)
    users = [m.get("content") for m in messages if m.get("role") == "user"]
    calls = [
        RecordedCall(n, start.call_id, start.name, start.arguments_raw, end.result if end else "")
        for n, start, end in parent.calls(set(mockable_call_ids(messages)))
    ]
    tools = {spec.name: spec.description for spec in recorded_specs(parent)}
    return ForkContext(
        run_id=parent.run_id,
        turn=turn,
        turns=list(parent.model_turns),
        system=system if isinstance(system, str) else parent.run_start.system_prompt,
        user=users[-1] if users and isinstance(users[-1], str) else None,
        tools=tools,
        calls=calls,
        fork_script=offline_model(settings, parent.run_start),
        api=parent.api,
    )


def plan_fork(run: Recording | ParentRun, request: ForkRequest) -> ForkPlan:
    """Check the request against the recording and rebuild the history with the edits."""
    parent = as_parent(run)
    turns = parent.model_turns
    if not turns:
        raise ForkError(f"run {parent.run_id[:12]} has no model turn to fork from")
    if request.turn < 1 or request.turn not in turns:
        raise ForkError(
            f"turn {request.turn} is outside run {parent.run_id[:12]}: pick a turn from "
            f"{turns[0]} to {turns[-1]}"
        )
    messages = parent.history(request.turn)
    edits: list[Edit] = []
    start = parent.run_start
    task, system_prompt = start.task, start.system_prompt

    specs = recorded_specs(parent)
    names = [spec.name for spec in specs]
    for name in [*request.tool_descriptions, *request.tool_schemas]:
        if name not in names:
            known = ", ".join(names) or "none"
            raise ForkError(f"run {parent.run_id[:12]} offered no tool {name!r}; tools: {known}")
    valid_ids = mockable_call_ids(messages)
    for call_id in request.mocks:
        if call_id not in valid_ids:
            listed = ", ".join(valid_ids) if valid_ids else "none before this turn"
            raise ForkError(
                f"no tool call {call_id!r} in the history of turn {request.turn}; "
                f"valid ids: {listed}"
            )

    if request.system is not None:
        system_prompt = request.system
        if messages and messages[0].get("role") == "system":
            messages[0] = {**messages[0], "content": request.system}
        else:
            messages.insert(0, {"role": "system", "content": request.system})
        edits.append(Edit(kind="system", value=request.system))
    if request.user is not None:
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        if not users:
            raise ForkError(f"turn {request.turn} has no user message to edit")
        messages[users[-1]] = {**messages[users[-1]], "content": request.user}
        if len(users) == 1:
            task = request.user  # the only user message is the task
        edits.append(Edit(kind="user", value=request.user))
    for name, text in request.tool_descriptions.items():
        specs = [replace(s, description=text) if s.name == name else s for s in specs]
        edits.append(Edit(kind="tool_description", target=name, value=text))
    for name, schema in request.tool_schemas.items():
        if any(s.wire is not None for s in specs if s.name == name):
            raise ForkError(
                f"tool {name!r} is not a JSON function (a hosted or custom tool of the "
                "client's wire format): it has no parameter schema to replace"
            )
        specs = [replace(s, parameters=schema) if s.name == name else s for s in specs]
        edits.append(Edit(kind="tool_schema", target=name, value=schema))
    for call_id, text in request.mocks.items():
        messages = [
            {**m, "content": text}
            if m.get("role") == "tool" and m.get("tool_call_id") == call_id
            else m
            for m in messages
        ]
        edits.append(Edit(kind="mock_result", target=call_id, value=text))
    return ForkPlan(
        parent=parent,
        turn=request.turn,
        messages=messages,
        specs=specs,
        edits=edits,
        mocks=dict(request.mocks),
        policy=request.policy or ToolPolicy.layered(allow_side_effects=request.allow_side_effects),
        task=task,
        system_prompt=system_prompt,
    )


class ForkToolset:
    """Recorded results for repeated calls; live calls only when they change nothing."""

    def __init__(self, plan: ForkPlan, live: list[Toolset] | None = None) -> None:
        self._planned = plan.specs
        self._recorded_read_only = recorded_read_only(plan.parent)
        self._live: dict[str, Toolset] = {}
        self._live_name: dict[str, str] = {}  # offered name -> the name its toolset gave it
        self._live_read_only: dict[str, bool] = {}
        self._specs: list[ToolSpec] = []
        self._read_only: dict[str, bool] = {}
        self._policy = plan.policy
        run_start = plan.parent.run_start
        self._client_tools = {
            spec.name
            for spec in self._planned
            if run_start.origin in OBSERVED_ORIGINS
            or run_start.tool_sources.get(spec.name) == "client"
        }
        # The client's final-answer tool (smolagents'): its client ended the run on a call
        # to it with that answer, and so does the fork (`return_direct`).
        self._answer_tools = self._client_tools & FINAL_ANSWER_TOOLS
        self.decisions: dict[str, Decision] = {}
        # Kept in the fork's run_start (`meta.tool_policy`), updated as live tools join.
        self.policy_record: dict[str, Any] = {}
        self.add_live(live or [])
        self.stopped: str | None = None  # why the fork cannot go on, once it cannot
        self.refused: list[str] = []  # tools not run because they may change things
        self._parent = plan.parent
        self._mocks = plan.mocks
        # The parent's result of each call made here, looked up when first made.
        self._recorded: dict[CallKey, ToolResult | None] = {}

    def add_live(self, toolsets: list[Toolset]) -> None:
        """Tools that may run for real (e.g. MCP servers started after the agent exists);
        call before the run starts. Their read-only flags are the authoritative ones."""
        by_source: dict[tuple[str, str], tuple[Toolset, ToolSpec]] = {}
        for toolset in toolsets:
            for spec in toolset.specs():
                self._live.setdefault(spec.name, toolset)
                self._live_name.setdefault(spec.name, spec.name)
                self._live_read_only.setdefault(spec.name, spec.read_only)
                own = spec.source_name or spec.name
                by_source.setdefault((spec.source, own), (toolset, spec))
        # A tool the parent offered under another name (a clash: `fs__read_file`) runs on the
        # server's tool of its own name, not on whatever else is called that now.
        for planned in self._planned:
            found = by_source.get((planned.source, planned.source_name or ""))
            if planned.source_name and found is not None:
                toolset, spec = found
                self._live[planned.name], self._live_name[planned.name] = toolset, spec.name
                self._live_read_only[planned.name] = spec.read_only
        self._read_only = {
            spec.name: self._live_read_only.get(spec.name, spec.name in self._recorded_read_only)
            for spec in self._planned
        }
        self._specs = [
            replace(
                s,
                read_only=self._read_only[s.name],
                return_direct=s.return_direct or s.name in self._answer_tools,
            )
            for s in self._planned
        ]
        self.decisions = decide_all(self._policy, self._read_only, self._client_tools)
        self.policy_record.clear()
        self.policy_record.update(record(self.decisions))

    def specs(self) -> list[ToolSpec]:
        return list(self._specs)

    def recorded(self, name: str, arguments: dict[str, Any]) -> ToolResult | None:
        """The parent's result of the same call (its first with these arguments), mocked
        when the request mocks that call's result; None when the parent never made it."""
        key = call_key(name, arguments)
        if key not in self._recorded:
            found = self._parent.recorded_call(key)
            result = None
            if found is not None:
                start, end = found
                mocked = self._mocks.get(start.call_id)
                if mocked is not None:
                    result = ToolResult(ok=True, text=mocked, mocked=True)
                else:
                    result = served_result(end)
            self._recorded[key] = result
        return self._recorded[key]

    def live_names(self) -> set[str]:
        """Offered tools a live toolset can run here."""
        return {spec.name for spec in self._planned if spec.name in self._live}

    async def call(self, name: str, arguments: dict[str, Any], call_id: str) -> ToolResult:
        recorded = self.recorded(name, arguments)
        if recorded is None and name in self._answer_tools:
            answer = final_answer([function_call(call_id, name, arguments)])
            recorded = ToolResult(ok=True, text=answer or "")  # what the client's tool returns
        decision = self.decisions.get(name) or self._policy.decide(name, read_only=False)
        if name in self._client_tools and recorded is None and decision.policy == "recorded":
            shown = json.dumps(arguments, ensure_ascii=False)
            self.stopped = (
                f"fork stopped at {name}({shown}): the recorded client ran this tool, and "
                "the recording has no result for these arguments; mock the call's result "
                f"(call id {call_id}) or fork at another turn"
            )
            return ToolResult(ok=False, text=self.stopped, error=NOT_RECORDED)

        async def run_live() -> ToolResult:
            toolset = self._live.get(name)
            if toolset is None:
                return ToolResult(
                    ok=False,
                    text=f"{name} is not available in this fork (only recorded results are)",
                    error="unavailable",
                )
            return await toolset.call(self._live_name.get(name, name), arguments, call_id)

        result = await apply(decision, recorded, run_live, "fork")
        if not result.ok and result.error in (REFUSED, "denied"):
            self.refused.append(name)
        return result


def fork_agent(
    plan: ForkPlan,
    model: ChatModel,
    *,
    live_toolsets: list[Toolset] | None = None,
    sinks: list[Sink] | None = None,
    hooks: Hooks | None = None,
    **config_overrides: Any,
) -> Agent:
    """The agent that runs the fork from turn N; drive it with `run_stream()` or `run()`."""
    toolset = ForkToolset(plan, live_toolsets)

    async def stop_when_stuck(
        call: ModelCall, inner: Callable[[ModelCall], AsyncIterator[StreamItem]]
    ) -> AsyncIterator[StreamItem]:
        # The model has read the tool's refusal; asking it again would only guess.
        if toolset.stopped is not None:
            raise ModelCallStopped(NOT_RECORDED, toolset.stopped)
        async for item in inner(call):
            yield item

    hooks = hooks or Hooks()
    hooks = Hooks(model=[stop_when_stuck, *hooks.model], tool=list(hooks.tool))
    config = plan.config(**config_overrides)
    # The same dict the toolset keeps up to date: MCP tools may join before the run starts.
    config.meta[META_KEY] = toolset.policy_record
    return Agent(model, [toolset], config, sinks=sinks, hooks=hooks)


def fork_toolset(agent: Agent) -> ForkToolset:
    """The fork's toolset of an agent made by `fork_agent`."""
    toolset = agent.toolsets[0]
    assert isinstance(toolset, ForkToolset)
    return toolset
