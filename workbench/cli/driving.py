"""Running an agent from the command line, shared by `run`, `demo` and `fork`: live
printing, a clean Ctrl-C, and no half trace left by a run that never started."""

from __future__ import annotations

import asyncio
import contextlib
import signal

from agent_core.agent import Agent, RunResult
from traces.writer import JsonlWriter
from workbench.cli.common import CliError, ExitCode, SetupError
from workbench.cli.run_printer import RunPrinter
from workbench.engine.recording.running.service import PreparedRun


def run_agent(run: PreparedRun, printer: RunPrinter | None) -> RunResult:
    """Run to the end, printing as it goes. A setup failure before the run started leaves
    no half trace behind; Ctrl-C cancels cleanly and the trace ends with `cancelled`."""
    agent, writer = run.agent, run.writer
    try:
        result = asyncio.run(_interruptible(run, printer))
    except asyncio.CancelledError:  # Ctrl-C before the run itself had started
        _drop_unstarted(agent, writer)
        raise CliError("cancelled before the run started", ExitCode.CANCELLED) from None
    except SetupError as exc:  # an MCP server that will not start
        _drop_unstarted(agent, writer)
        raise CliError(f"--mcp-config {run.mcp_config}: {exc}") from None
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


async def _interruptible(run: PreparedRun, printer: RunPrinter | None) -> RunResult | None:
    """`run.run`, with Ctrl-C cancelling the run (which then records `cancelled`)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        if task is not None:
            loop.add_signal_handler(signal.SIGINT, task.cancel)
    try:
        return await run.run(printer.item if printer is not None else None)
    except asyncio.CancelledError:
        if run.agent.result is None:
            raise
        return run.agent.result
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)
