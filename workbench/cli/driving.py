"""Running an agent from the command line, shared by `run` and `fork`: the tools the flags
name, MCP servers, secrets kept out of the trace, live printing and a clean Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

from agent_core.agent import Agent, RunResult
from agent_core.tools.base import Toolset
from agent_core.tools.builtin import builtin_tools, chosen_builtins
from agent_core.tools.loader import ToolLoadError, load_toolset
from traces.writer import JsonlWriter
from workbench.cli.common import CliError, ExitCode, SetupError
from workbench.cli.run_printer import RunPrinter
from workbench.engine.recording.run_service import (
    DEFAULT_MCP_START_TIMEOUT_S,
    AttachTools,
    drive,
    offer_tools,
)


def local_toolsets(
    root: Path, references: list[str] | None, builtins: list[str] | None = None
) -> list[Toolset]:
    """The built-in tools confined to `root` (only `builtins` when given, none when it is
    empty), plus every `--tools package.module:attr`."""
    if not root.is_dir():
        raise CliError(f"--root {root}: not a folder; pass the folder the tools may read")
    try:
        chosen = builtin_tools(root) if builtins is None else chosen_builtins(root, builtins)
    except ValueError as exc:
        raise CliError(f"--builtin-tools: {exc}") from None
    toolsets: list[Toolset] = [chosen] if chosen.tools else []
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
    attach: AttachTools = offer_tools,
    mcp_start_timeout_s: float = DEFAULT_MCP_START_TIMEOUT_S,
) -> RunResult:
    """Run to the end, printing as it goes. A setup failure before the run started leaves
    no half trace behind; Ctrl-C cancels cleanly and the trace ends with `cancelled`."""
    try:
        result = asyncio.run(
            _interruptible(agent, printer, mcp_config, attach, mcp_start_timeout_s)
        )
    except asyncio.CancelledError:  # Ctrl-C before the run itself had started
        _drop_unstarted(agent, writer)
        raise CliError("cancelled before the run started", ExitCode.CANCELLED) from None
    except SetupError as exc:  # an MCP server that will not start
        _drop_unstarted(agent, writer)
        raise CliError(f"--mcp-config {mcp_config}: {exc}") from None
    if result is None:
        _drop_unstarted(agent, writer)
        raise CliError("the run ended without a result", ExitCode.RUN_ERROR)
    return result


def check_trace_whole(writer: JsonlWriter) -> None:
    """`CliError` (exit 3) when the run's trace could not be written whole (a full disk):
    the run went on, but its record stops at its last whole event."""
    if writer.failure is not None:
        raise CliError(
            f"the trace {writer.path} could not be written whole ({writer.failure}); it ends "
            "at its last whole event: free some space and run again",
            ExitCode.RUN_ERROR,
        )


def _drop_unstarted(agent: Agent, writer: JsonlWriter) -> None:
    writer.close()
    if agent.result is None:
        writer.path.unlink(missing_ok=True)


async def _interruptible(
    agent: Agent,
    printer: RunPrinter | None,
    mcp_config: Path | None,
    attach: AttachTools,
    mcp_start_timeout_s: float,
) -> RunResult | None:
    """`drive`, with Ctrl-C cancelling the run (which then records `cancelled`)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        if task is not None:
            loop.add_signal_handler(signal.SIGINT, task.cancel)
    try:
        on_item = printer.item if printer is not None else None
        return await drive(
            agent,
            on_item,
            mcp_config=mcp_config,
            attach=attach,
            mcp_start_timeout_s=mcp_start_timeout_s,
        )
    except asyncio.CancelledError:
        if agent.result is None:
            raise
        return agent.result
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
