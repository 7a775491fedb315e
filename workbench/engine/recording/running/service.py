"""Running the agent for every front end (CLI, TUI, pytest plugin, mcp-serve): the model
from settings, the local tools a run may call, and driving a run to its end (a fork's own
choices are `fork_runner`'s).

Each front end keeps only what is its own: the CLI reads flags, prints and handles Ctrl-C;
the TUI streams items to its widgets; the plugin reports per case. Module-level imports stay
light because every CLI command imports this module to register.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.agent import Agent, RunResult, TextDelta
    from agent_core.model.base import ChatModel
    from agent_core.tools.base import Toolset
    from traces.events import Event, Limits
    from traces.writer import JsonlWriter

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
    """An agent ready to run, the writer recording its trace (close it afterwards), and the
    MCP servers that join it when it starts (`drive`)."""

    agent: Agent
    writer: JsonlWriter
    mcp_config: Path | None = None
    attach: AttachTools = offer_tools
    mcp_start_timeout_s: float = DEFAULT_MCP_START_TIMEOUT_S

    async def run(
        self, on_item: Callable[[Event | TextDelta], object] | None = None
    ) -> RunResult | None:
        """`drive` this run to its end."""
        return await drive(
            self.agent,
            on_item,
            mcp_config=self.mcp_config,
            attach=self.attach,
            mcp_start_timeout_s=self.mcp_start_timeout_s,
        )


# --- tools --------------------------------------------------------------------------------


def local_toolsets(
    root: Path, references: list[str] | None, builtins: list[str] | None = None
) -> list[Toolset]:
    """The built-in tools confined to `root` (only `builtins` when given, none when it is
    empty), plus every toolset `package.module:attribute` of `references`."""
    import sys

    from agent_core.tools.builtin import builtin_tools, chosen_builtins
    from agent_core.tools.loader import ToolLoadError, load_toolset

    if not root.is_dir():
        raise SetupError(f"--root {root}: not a folder; pass the folder the tools may read")
    try:
        chosen = builtin_tools(root) if builtins is None else chosen_builtins(root, builtins)
    except ValueError as exc:
        raise SetupError(f"--builtin-tools: {exc}") from None
    toolsets: list[Toolset] = [chosen] if chosen.tools else []
    if references and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` would: modules next to the user
    for reference in references or ():
        try:
            toolsets.append(load_toolset(reference))
        except ToolLoadError as exc:
            raise SetupError(str(exc)) from None
    return toolsets


def mcp_config_secrets(config_path: Path | None) -> list[str]:
    """Header and secret-looking env values of an MCP config, kept out of the trace."""
    if config_path is None:
        return []
    if not config_path.is_file():
        raise SetupError(f"--mcp-config {config_path}: no such file")
    from agent_core.mcp_tools import load_mcp_config, mcp_secrets  # the mcp SDK is slow to load

    try:
        return mcp_secrets(load_mcp_config(config_path))
    except Exception as exc:  # McpConfigError: a bad file, said in one line
        raise SetupError(f"--mcp-config {config_path}: {exc}") from None
