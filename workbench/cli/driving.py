"""Running an agent from the command line, shared by `run` and `fork`: the tools the flags
name, MCP servers, secrets kept out of the trace, live printing and a clean Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path

from agent_core.agent import Agent, RunResult
from agent_core.tools.base import Toolset
from agent_core.tools.builtin import builtin_tools
from agent_core.tools.loader import ToolLoadError, load_toolset
from traces.writer import JsonlWriter
from workbench.cli.common import CliError
from workbench.cli.run_printer import RunPrinter

# What to do with the MCP toolsets once their servers are up: a run offers them, a fork
# makes them its live tools.
AttachTools = Callable[[Agent, list[Toolset]], None]


def local_toolsets(root: Path, references: list[str] | None) -> list[Toolset]:
    """The built-in tools confined to `root`, plus every `--tools package.module:attr`."""
    if not root.is_dir():
        raise CliError(f"--root {root}: not a folder; pass the folder the tools may read")
    toolsets: list[Toolset] = [builtin_tools(root)]
    if references and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` would: modules next to the user
    for reference in references or ():
        try:
            toolsets.append(load_toolset(reference))
        except ToolLoadError as exc:
            raise CliError(str(exc)) from None
    return toolsets


def mcp_config_secrets(config_path: Path | None) -> list[str]:
    """Header and secret-looking env values of an MCP config, kept out of the trace."""
    if config_path is None:
        return []
    if not config_path.is_file():
        raise CliError(f"--mcp-config {config_path}: no such file")
    from agent_core.mcp_tools import load_mcp_config, mcp_secrets  # the mcp SDK is slow to load

    try:
        return mcp_secrets(load_mcp_config(config_path))
    except Exception as exc:  # McpConfigError: a bad file, said in one line
        raise CliError(f"--mcp-config {config_path}: {exc}") from None


def run_agent(
    agent: Agent,
    printer: RunPrinter | None,
    writer: JsonlWriter,
    *,
    mcp_config: Path | None = None,
    attach: AttachTools = lambda agent, toolsets: agent.toolsets.extend(toolsets),
    mcp_start_timeout_s: float = 10.0,
) -> RunResult:
    """Run to the end, printing as it goes. A setup failure before the run started leaves
    no half trace behind; Ctrl-C cancels cleanly and the trace ends with `cancelled`."""
    try:
        return asyncio.run(_drive(agent, printer, mcp_config, attach, mcp_start_timeout_s))
    except asyncio.CancelledError:  # Ctrl-C before the run itself had started
        _drop_unstarted(agent, writer)
        raise CliError("cancelled before the run started", 130) from None
    except CliError:
        _drop_unstarted(agent, writer)
        raise


def _drop_unstarted(agent: Agent, writer: JsonlWriter) -> None:
    writer.close()
    if agent.result is None:
        writer.path.unlink(missing_ok=True)


async def _drive(
    agent: Agent,
    printer: RunPrinter | None,
    mcp_config: Path | None,
    attach: AttachTools,
    mcp_start_timeout_s: float,
) -> RunResult:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        if task is not None:
            loop.add_signal_handler(signal.SIGINT, task.cancel)
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
                    raise CliError(f"--mcp-config {mcp_config}: {exc}") from None
            async for item in agent.run_stream():
                if printer is not None:
                    printer.item(item)
    except asyncio.CancelledError:
        if agent.result is None:
            raise
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
        close = getattr(agent.model, "aclose", None)
        if close is not None:
            with contextlib.suppress(Exception):
                await close()
    if agent.result is None:
        raise CliError("the run ended without a result", 3)
    return agent.result
