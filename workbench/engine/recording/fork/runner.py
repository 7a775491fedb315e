"""The one fork runner: `workbench fork`, the TUI's fork dialog and mcp-serve's `fork_run`
parse what they were asked, call it, and print what it says.

    setup = setup_fork(parent, ForkRequest(turn=2), ForkOptions(settings), home)
    setup.dry_run().lines()        # the plan: nothing run, nothing written
    fork = open_fork(setup, home)  # the new run, recorded in home's traces
    outcome = await fork.finish(on_item)

What a front end must never decide for itself is decided here, once: the model (the
settings given, else the run's offline script, in the parent's wire format); the folder new
file-tool calls read, which the fork records as its root (the one given, else the parent's,
else the current folder, with a note saying so; never a folder a bundle named); the limits
(given, else the parent's); the secrets kept out of the trace (the model's key, the MCP
config's headers and secret env values); the tool policy (the request's, else the home's);
and which tools may run live (the built-ins on that folder, whatever the front end).
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_core.tools.base import Toolset
from traces.events import Limits, RunStart
from workbench.engine.recording.fork.dry_run import DryRun, dry_run
from workbench.engine.recording.fork.plan import (
    ForkPlan,
    ForkRequest,
    fork_agent,
    fork_toolset,
    offline_model,
    plan_fork,
    recorded_root,
)
from workbench.engine.recording.running.service import (
    DEFAULT_MCP_START_TIMEOUT_S,
    ModelSettings,
    PreparedRun,
    SetupError,
    build_model,
    local_toolsets,
    mcp_config_secrets,
)
from workbench.engine.recording.runs.bundle_import import BUNDLED
from workbench.engine.recording.runs.load import Recording
from workbench.engine.recording.runs.parent import ParentRun

if TYPE_CHECKING:
    from collections.abc import Callable

    from agent_core.agent import Agent, RunResult, TextDelta
    from agent_core.model.base import ChatModel
    from traces.events import Event
    from traces.writer import JsonlWriter


@dataclass(frozen=True)
class ForkOptions:
    """How a fork runs, as the front end was asked: everything but the edits."""

    settings: ModelSettings = field(default_factory=ModelSettings)
    root: Path | None = None  # the folder new file-tool calls read: None, the parent's
    limits: Limits | None = None  # None: the parent's
    builtins: tuple[str, ...] | None = None  # the built-in tools offered live: None, all
    tools: tuple[str, ...] = ()  # toolsets (package.module:attribute) that may run live
    mcp_config: Path | None = None  # MCP servers whose tools may run live
    mcp_start_timeout_s: float = DEFAULT_MCP_START_TIMEOUT_S


@dataclass(frozen=True)
class ForkChoices:
    """What was chosen for a fork that its front end did not say, and the notes saying so."""

    settings: ModelSettings  # the model the fork calls
    root: Path  # absolute: new file-tool calls read it, and the fork records it as its root
    limits: Limits
    notes: list[str]


def gone_note(missing: str, current: Path) -> str:
    return (
        f"the parent run's folder {missing} is gone; new file-tool calls read the current "
        f"folder {current} (--root DIR chooses another)"
    )


def bundled_refusal(run_id: str) -> str:
    return (
        f"run {run_id[:12]} came from a bundle, and its fork never reads a folder the bundle "
        "names: pass --root DIR, the folder its file tools may read"
    )


def fork_choices(start: RunStart, options: ForkOptions, api: str | None = None) -> ForkChoices:
    """The folder: `options.root`, else the one the parent's tools read, else the current
    one (noted); a run from a bundle (or a fork of one) needs `options.root`, else
    `SetupError`. The model: `options.settings`, else the run's offline script when they
    choose none (noted), in the wire format they choose, else the parent's (`api`). The
    limits: `options.limits`, else the parent's."""
    notes: list[str] = []
    root = options.root
    if root is None and start.meta.get(BUNDLED):
        raise SetupError(bundled_refusal(start.run_id))
    if root is None:
        root = recorded_root(start)
    if root is None:
        root = Path.cwd()
        recorded = start.meta.get("root")
        if recorded:
            notes.append(gone_note(str(recorded), root))
    settings = options.settings
    script = offline_model(settings, start)
    if script is not None:
        settings = replace(settings, script=script)
        notes.append(f"no model configured: using the run's offline model script {script}")
    if settings.api is None and api is not None:
        settings = settings.for_api(api)
    return ForkChoices(settings, root.resolve(), options.limits or start.limits, notes)


def with_home_policy(request: ForkRequest, home: Path) -> ForkRequest:
    """The request with the tool policy of `<home>/tool-policy.toml` (and its
    `allow_side_effects`), unless it brings a policy of its own."""
    from workbench.engine.recording.fork.tool_policy import PolicyError, ToolPolicy, load_home_rules

    if request.policy is not None:
        return request
    try:
        rules = load_home_rules(home)
    except PolicyError as exc:
        raise SetupError(str(exc)) from None
    policy = ToolPolicy.layered(allow_side_effects=request.allow_side_effects, home=rules)
    return replace(request, policy=policy)


@dataclass(frozen=True)
class ForkSetup:
    """A fork planned and its choices made, before anything runs or is written."""

    plan: ForkPlan
    options: ForkOptions
    choices: ForkChoices
    live: list[Toolset]  # the toolsets new calls may run on (MCP servers join when started)

    @property
    def notes(self) -> list[str]:
        return self.choices.notes

    @property
    def model(self) -> str:
        """The model the fork calls, as its plan names it."""
        settings = self.choices.settings
        return (
            f"script {settings.script}" if settings.script else settings.model or "none configured"
        )

    def dry_run(self, *, whole_prefix: bool = True) -> DryRun:
        """The fork's plan (`dry_run.dry_run`): what is served from the log, each tool's
        policy and whether a new call would fire live here, and the notes."""
        notes = list(self.notes)
        if self.options.mcp_config is not None:
            notes.append(
                f"the MCP servers of {self.options.mcp_config} are not started in a dry run; "
                "their tools are planned with the read-only flags the parent run recorded"
            )
        return dry_run(
            self.plan,
            live_toolsets=self.live,
            model=self.model,
            notes=notes,
            whole_prefix=whole_prefix,
        )


def setup_fork(
    parent: Recording | ParentRun, request: ForkRequest, options: ForkOptions, home: Path
) -> ForkSetup:
    """The fork of `parent` that `request` asks for, planned (`ForkError` when it does not
    fit the recording) with its choices made (`SetupError` when they cannot be)."""
    plan = plan_fork(parent, with_home_policy(request, home))
    choices = fork_choices(plan.parent.run_start, options, plan.parent.api)
    builtins = None if options.builtins is None else list(options.builtins)
    live = local_toolsets(choices.root, list(options.tools), builtins)
    return ForkSetup(plan, options, choices, live)


@dataclass(frozen=True)
class ForkOutcome:
    """How a fork ended, and what every front end says about it."""

    result: RunResult
    model: str
    notes: list[str]
    refused: list[str]  # tools the policy did not let run
    stopped: str | None  # why the fork could not go on (a call the recording has no result for)
    trace: Path
    trace_whole: bool  # False: a write failed; the trace ends at its last whole event


@dataclass(frozen=True)
class Fork:
    """A fork ready to run: its model, its agent and the writer recording its trace."""

    setup: ForkSetup
    model: ChatModel
    prepared: PreparedRun

    @property
    def agent(self) -> Agent:
        return self.prepared.agent

    @property
    def writer(self) -> JsonlWriter:
        return self.prepared.writer

    def outcome(self, result: RunResult) -> ForkOutcome:
        toolset = fork_toolset(self.agent)
        return ForkOutcome(
            result=result,
            model=self.model.name,
            notes=self.setup.notes,
            refused=list(toolset.refused),
            stopped=toolset.stopped,
            trace=self.writer.path,
            trace_whole=self.writer.failure is None,
        )

    async def finish(
        self, on_item: Callable[[Event | TextDelta], object] | None = None
    ) -> ForkOutcome:
        """Run to the end, every streamed item to `on_item`, and close the trace."""
        try:
            result = await self.prepared.run(on_item)
        finally:
            self.writer.close()
        if result is None:
            raise SetupError("the fork ended before its run started")
        return self.outcome(result)


def _add_live(agent: Agent, toolsets: list[Toolset]) -> None:
    """A fork's MCP servers, once up, are tools its new calls may run on."""
    fork_toolset(agent).add_live(toolsets)


def open_fork(setup: ForkSetup, home: Path) -> Fork:
    """The fork as a new run recorded in `home`'s traces, the secrets redacted; `SetupError`
    when its model cannot be built or its trace opened."""
    from agent_core.agent import new_run_id
    from traces.home import RedactionConfigError, open_run_trace

    options, choices = setup.options, setup.choices
    model = build_model(choices.settings, choices.limits)
    secrets = [choices.settings.api_key, *mcp_config_secrets(options.mcp_config)]
    run_id = new_run_id()
    try:
        writer = open_run_trace(home, run_id, secrets)
    except RedactionConfigError as exc:
        raise SetupError(str(exc)) from None
    # The folder chosen here is the fork's own: a fork of the fork reads it, not a bundle's.
    meta = {k: v for k, v in setup.plan.config().meta.items() if k != BUNDLED}
    agent = fork_agent(
        setup.plan,
        model,
        live_toolsets=setup.live,
        sinks=[writer],
        run_id=run_id,
        limits=choices.limits,
        meta=meta | {"root": str(choices.root)},
    )
    prepared = PreparedRun(
        agent,
        writer,
        mcp_config=options.mcp_config,
        attach=_add_live,
        mcp_start_timeout_s=options.mcp_start_timeout_s,
    )
    return Fork(setup, model, prepared)


class CancelFork:
    """Stops a fork running in a worker thread, from another thread: its task is cancelled,
    so the agent records `run_end` with status `cancelled`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._target: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None
        self.requested = False

    def bind(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any] | None) -> None:
        with self._lock:
            if task is None:
                return
            self._target = (loop, task)
            if self.requested:
                loop.call_soon_threadsafe(task.cancel)

    def __call__(self) -> None:
        with self._lock:
            self.requested = True
            if self._target is not None:
                loop, task = self._target
                loop.call_soon_threadsafe(task.cancel)


def run_fork(
    parent: Recording | ParentRun,
    request: ForkRequest,
    options: ForkOptions,
    home: Path,
    on_item: Callable[[Event | TextDelta], object],
    cancel: CancelFork | None = None,
) -> ForkOutcome:
    """Run a fork of `parent` to its end in this thread (on an event loop of its own).

    Every streamed item goes to `on_item` as it happens; `cancel()`, from any thread, ends
    the run `cancelled`. A request that does not fit is a `ForkError`, a fork that cannot be
    set up a `SetupError`."""
    fork = open_fork(setup_fork(parent, request, options, home), home)

    async def run() -> ForkOutcome:
        if cancel is not None:
            cancel.bind(asyncio.get_running_loop(), asyncio.current_task())
        return await fork.finish(on_item)

    try:
        return asyncio.run(run())
    except asyncio.CancelledError:
        if fork.agent.result is None:
            raise
        return fork.outcome(fork.agent.result)  # cancelled: the run ended and says so
