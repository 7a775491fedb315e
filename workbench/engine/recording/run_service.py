"""Running the agent for every front end (CLI, TUI, pytest plugin): the model from settings,
a fork from its plan to a recorded run (its model and folder chosen one way for all), and
driving a run to its end.

Each front end keeps only what is its own: the CLI reads flags, prints and handles Ctrl-C;
the TUI streams items to its widgets; the plugin reports per case. Module-level imports stay
light because every CLI command imports this module to register.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

    from agent_core.agent import Agent, RunResult, TextDelta
    from agent_core.model.base import ChatModel
    from agent_core.tools.base import Toolset
    from traces.events import Event, Limits, RunStart
    from traces.writer import JsonlWriter
    from workbench.engine.recording.dry_run import DryRun
    from workbench.engine.recording.fork import ForkPlan, ForkRequest
    from workbench.engine.recording.load import Recording
    from workbench.engine.recording.parent import ParentRun

# The wire formats the agent's model client speaks (`run --api`); traces.events.ModelApi.
MODEL_APIS = ("chat", "responses", "anthropic")
NO_MODEL_HINT = (
    "no model configured: pass --base-url URL --model NAME (or set OPENAI_BASE_URL and "
    "WORKBENCH_MODEL, plus OPENAI_API_KEY if the endpoint needs one), or --script FILE to "
    "use a scripted model"
)

# How long each MCP server has to start and list its tools (`--mcp-start-timeout`).
DEFAULT_MCP_START_TIMEOUT_S = 10.0


class SetupError(Exception):
    """A run cannot be set up (no model, a bad script, an unreadable file): one line."""


@dataclass(frozen=True)
class ModelSettings:
    """Which model a run talks to: an OpenAI-compatible endpoint, or a model script."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    script: Path | None = None
    stream: bool = True
    # The wire format, one of MODEL_APIS; None: chat, or for a fork the parent run's own.
    api: str | None = None
    # The fields (base_url, model, api_key) the caller left to the environment (`from_env`),
    # read again by `for_api` when the wire format is known only later (a fork's).
    from_environment: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @classmethod
    def from_env(
        cls,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        script: Path | None = None,
        stream: bool = True,
        api: str | None = None,
    ) -> ModelSettings:
        """The values given, else OPENAI_BASE_URL, WORKBENCH_MODEL and OPENAI_API_KEY (for
        Anthropic Messages, ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY first)."""
        from agent_core.wire.codecs import api_named, codec_for

        env = os.environ.get
        prefixes = codec_for(api_named(api)).env_prefixes
        given = {"base_url": base_url, "model": model, "api_key": api_key}
        names = {
            "base_url": [f"{prefix}_BASE_URL" for prefix in prefixes],
            "model": ["WORKBENCH_MODEL"],
            "api_key": [f"{prefix}_API_KEY" for prefix in prefixes],
        }
        left = frozenset(name for name, value in given.items() if not value)
        values = {
            name: next(filter(None, map(env, names[name])), None) if name in left else value
            for name, value in given.items()
        }
        return cls(**values, script=script, stream=stream, api=api, from_environment=left)

    def edited(
        self, base_url: str | None, model: str | None, api_key: str | None, script: Path | None
    ) -> ModelSettings:
        """These settings with the values a form holds (the TUI's fork dialog, filled in from
        them): a value the environment gave that is still there is still the environment's."""
        held = {"base_url": base_url, "model": model, "api_key": api_key}
        left = frozenset(
            name for name in self.from_environment if held[name] == (getattr(self, name) or None)
        )
        return replace(
            self,
            base_url=base_url,
            model=model,
            api_key=api_key,
            script=script,
            from_environment=left,
        )

    def for_api(self, api: str | None) -> ModelSettings:
        """These settings for the wire format `api`, what was left to the environment read
        again for it (a fork of an Anthropic run reads ANTHROPIC_BASE_URL, not OpenAI's)."""
        if not self.from_environment:
            return replace(self, api=api)
        given = {
            name: None if name in self.from_environment else getattr(self, name)
            for name in ("base_url", "model", "api_key")
        }
        return ModelSettings.from_env(**given, script=self.script, stream=self.stream, api=api)


def build_model(settings: ModelSettings, limits: Limits | None = None) -> ChatModel:
    """The model `settings` name; `SetupError` when they name none or the script is bad."""
    from traces.events import Limits

    limits = limits or Limits()
    if settings.script is not None:
        from agent_core.model.script import ScriptError
        from agent_core.model.scripted import ScriptedModel

        try:
            return ScriptedModel.from_file(settings.script)
        except ScriptError as exc:
            raise SetupError(str(exc)) from None
    if not settings.model or not (settings.base_url or settings.api_key):
        raise SetupError(NO_MODEL_HINT)
    if settings.api_key and not settings.api_key.isascii():
        # It goes in an HTTP header, which carries ASCII only; the key itself is not shown.
        raise SetupError(
            "the API key (--api-key, else OPENAI_API_KEY) must be ASCII: it has other "
            "characters; check that it was copied whole and unchanged"
        )
    from agent_core.model.openai_client import OpenAIChatModel
    from agent_core.model.retry import RetryPolicy
    from agent_core.wire.codecs import api_named, codec_for

    api = api_named(settings.api)
    default_url = codec_for(api).default_base_url
    return OpenAIChatModel(
        settings.base_url or default_url,
        settings.api_key,
        settings.model,
        stream=settings.stream,
        timeout_s=limits.model_timeout_s,
        retry=RetryPolicy(deadline_s=limits.model_timeout_s),
        api=api,
    )


def text_or_file(value: str) -> str:
    """`TEXT` or `@FILE`, as the --system, --user and --tool-description flags take."""
    if value.startswith("@"):
        from traces.user_files import read_text

        path = Path(value[1:])
        try:
            return read_text(path)
        except OSError as exc:
            raise SetupError(f"cannot read {path}: {exc.strerror}") from exc
    return value


def parse_tool_descriptions(values: Iterable[str] | None) -> dict[str, str]:
    """`NAME=TEXT` or `NAME=@FILE` pairs from repeated --tool-description flags."""
    overrides: dict[str, str] = {}
    for value in values or ():
        name, sep, text = value.partition("=")
        if not sep or not name.strip():
            raise SetupError(f"--tool-description {value!r}: expected NAME=TEXT or NAME=@FILE")
        description = text_or_file(text).strip()
        if not description:
            raise SetupError(f"--tool-description for {name.strip()}: the description is empty")
        overrides[name.strip()] = description
    return overrides


# --- running ------------------------------------------------------------------------------

# What to do with the MCP toolsets once their servers are up: a run offers them, a fork
# makes them its live tools.
AttachTools = Callable[["Agent", list["Toolset"]], None]


def offer_tools(agent: Agent, toolsets: list[Toolset]) -> None:
    """A run's way to attach MCP toolsets: offer their tools to the model."""
    agent.toolsets.extend(toolsets)


async def drive(
    agent: Agent,
    on_item: Callable[[Event | TextDelta], object] | None = None,
    *,
    mcp_config: Path | None = None,
    attach: AttachTools = offer_tools,
    mcp_start_timeout_s: float = DEFAULT_MCP_START_TIMEOUT_S,
) -> RunResult | None:
    """Run `agent` to its end, handing every streamed item to `on_item`; the MCP servers of
    `mcp_config` are up for the run (each given `mcp_start_timeout_s` to start). The model
    is closed afterwards. Returns the result (None only if the run never got to start); a
    server that will not start is a `SetupError`."""
    try:
        async with AsyncExitStack() as stack:
            if mcp_config is not None:
                from agent_core.mcp_tools import open_mcp_toolsets

                opening = open_mcp_toolsets(
                    mcp_config,
                    agent.recorder,
                    tool_timeout_s=agent.config.limits.tool_timeout_s,
                    startup_timeout_s=mcp_start_timeout_s,
                )
                try:
                    attach(agent, list(await stack.enter_async_context(opening)))
                except Exception as exc:  # McpConfigError, McpStartError: one line
                    raise SetupError(str(exc)) from None
            async for item in agent.run_stream():
                if on_item is not None:
                    on_item(item)
    finally:
        close = getattr(agent.model, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await close()
    return agent.result


@dataclass(frozen=True)
class PreparedRun:
    """An agent ready to run and the writer recording its trace (close it afterwards)."""

    agent: Agent
    writer: JsonlWriter


def prepare_fork(
    plan: ForkPlan,
    model: ChatModel,
    home: Path,
    *,
    live_toolsets: list[Toolset],
    secrets: Iterable[str | None] = (),
    limits: Limits | None = None,
    root: Path | None = None,
) -> PreparedRun:
    """The fork of `plan` as a new run recorded in `home`'s traces, `secrets` redacted.
    New calls may run live on `live_toolsets` as the plan allows; `limits` replace the
    parent's; `root`, the folder the fork's file tools read, is recorded in its run_start."""
    from agent_core.agent import new_run_id
    from traces.home import RedactionConfigError, open_run_trace
    from workbench.engine.recording.fork import fork_agent

    run_id = new_run_id()
    try:
        writer = open_run_trace(home, run_id, secrets)
    except RedactionConfigError as exc:
        raise SetupError(str(exc)) from None
    from workbench.engine.recording.bundle_import import BUNDLED

    changes: dict[str, Any] = {} if limits is None else {"limits": limits}
    if root is not None:  # chosen here: a fork of the fork may read it, whatever the parent
        meta = {k: v for k, v in plan.config().meta.items() if k != BUNDLED}
        changes["meta"] = meta | {"root": str(root.resolve())}
    agent = fork_agent(
        plan, model, live_toolsets=live_toolsets, sinks=[writer], run_id=run_id, **changes
    )
    return PreparedRun(agent, writer)


# --- forks --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ForkSetup:
    """How a fork runs, chosen the same way by every front end: the model settings and the
    folder its new file-tool calls read, and what was chosen for the user."""

    settings: ModelSettings
    root: Path
    offline_script: Path | None = None  # the run's offline model, used as none was chosen
    missing_root: str | None = None  # the parent's folder, gone: `root` is the current one


def fork_setup(
    start: RunStart, settings: ModelSettings, root: Path | None = None, api: str | None = None
) -> ForkSetup:
    """`root` when given, else the folder the parent's tools read, else the current folder;
    `settings`, else the run's offline model script when they choose no model; the wire
    format `settings` choose, else the parent's own (`api`), so that a fork of a captured
    Responses or Anthropic run calls its model as the run did.

    A run that came from a bundle (or descends from one) names no folder of this machine a
    fork may read: its fork needs `root`, else `SetupError`."""
    from workbench.engine.recording.bundle_import import BUNDLED
    from workbench.engine.recording.fork import recorded_root

    missing_root = None
    if root is None and start.meta.get(BUNDLED):
        raise SetupError(
            f"run {start.run_id[:12]} came from a bundle, and its fork never reads a folder "
            "the bundle names: pass --root DIR, the folder its file tools may read"
        )
    if root is None:
        root = recorded_root(start)
        if root is None:
            recorded = start.meta.get("root")
            missing_root = str(recorded) if recorded else None
            root = Path(".")
    chosen, script = fork_settings(start, settings, api)
    return ForkSetup(chosen, root, script, missing_root)


def fork_settings(
    start: RunStart, settings: ModelSettings, api: str | None = None
) -> tuple[ModelSettings, Path | None]:
    """The model a fork of `start` calls (as `fork_setup` chooses it), and the run's offline
    model script when that is what was chosen."""
    from workbench.engine.recording.fork import offline_model

    script = offline_model(settings, start)
    if script is not None:
        settings = replace(settings, script=script)
    if settings.api is None and api is not None:
        settings = settings.for_api(api)
    return settings, script


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


def with_home_policy(request: ForkRequest, home: Path) -> ForkRequest:
    """The request with the tool policy of `<home>/tool-policy.toml` (and its
    `allow_side_effects`), unless it brings a policy of its own."""
    from dataclasses import replace as replaced

    from workbench.engine.recording.tool_policy import PolicyError, ToolPolicy, load_home_rules

    if request.policy is not None:
        return request
    try:
        rules = load_home_rules(home)
    except PolicyError as exc:
        raise SetupError(str(exc)) from None
    policy = ToolPolicy.layered(allow_side_effects=request.allow_side_effects, home=rules)
    return replaced(request, policy=policy)


def fork_dry_run(
    parent: Recording | ParentRun,
    request: ForkRequest,
    settings: ModelSettings,
    home: Path,
    *,
    whole_prefix: bool = True,
) -> DryRun:
    """What `run_fork` would do with the same arguments, run nothing and write nothing
    (`dry_run.dry_run`; not `whole_prefix`: only the turns its lines name are read)."""
    from agent_core.tools.builtin import builtin_tools
    from workbench.engine.recording.dry_run import dry_run
    from workbench.engine.recording.fork import plan_fork

    plan = plan_fork(parent, with_home_policy(request, home))
    setup = fork_setup(parent.run_start, settings, api=parent.api)
    chosen = setup.settings
    model = f"script {chosen.script}" if chosen.script else chosen.model or "none configured"
    live: list[Toolset] = [builtin_tools(setup.root)]
    return dry_run(plan, live_toolsets=live, model=model, whole_prefix=whole_prefix)


def run_fork(
    parent: Recording | ParentRun,
    request: ForkRequest,
    settings: ModelSettings,
    home: Path,
    on_item: Callable[[Event | TextDelta], object],
    cancel: CancelFork | None = None,
) -> RunResult | None:
    """Run a fork of `parent` to its end in this thread (on an event loop of its own),
    recorded in `home`'s traces, with the built-in tools on the folder `fork_setup` picks.

    Every streamed item goes to `on_item` as it happens; `cancel()`, from any thread, ends
    the run `cancelled`. A request that does not fit is a `ForkError`, a model that cannot be
    built a `SetupError`."""
    import asyncio

    from agent_core.tools.builtin import builtin_tools
    from workbench.engine.recording.fork import plan_fork

    plan = plan_fork(parent, with_home_policy(request, home))
    setup = fork_setup(parent.run_start, settings, api=parent.api)
    model = build_model(setup.settings, parent.run_start.limits)
    fork = prepare_fork(
        plan,
        model,
        home,
        live_toolsets=[builtin_tools(setup.root)],
        secrets=[setup.settings.api_key],
    )

    async def run() -> RunResult | None:
        if cancel is not None:
            cancel.bind(asyncio.get_running_loop(), asyncio.current_task())
        return await drive(fork.agent, on_item)

    try:
        return asyncio.run(run())
    except asyncio.CancelledError:
        if fork.agent.result is None:
            raise
        return fork.agent.result  # cancelled: the run ended and its trace says so
    finally:
        fork.writer.close()
