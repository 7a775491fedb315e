"""fork_run's plan and run, as `workbench fork` makes them (`recording.fork`,
`recording.run_service`), with what a server can decide alone: the model the environment
names (else the offline script the run names, as the demo's runs do) and, for new file-tool
calls, the folder the parent run's tools read, if it still exists (else none run live)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from traces.tree import answer_fields
from workbench.engine.mcp_server.tools import ToolError
from workbench.engine.recording.fork import ForkPlan, ForkRequest
from workbench.engine.recording.load import Recording
from workbench.engine.recording.parent import ParentRun


def plan(parent: Recording | ParentRun, request: ForkRequest) -> ForkPlan:
    from workbench.engine.recording.fork import ForkError, plan_fork

    try:
        return plan_fork(parent, request)
    except ForkError as exc:
        raise ToolError(str(exc)) from None


async def run_fork(fork_plan: ForkPlan, home: Path) -> dict[str, Any]:
    """Run the fork to its end as a new run in `home`; its id, how it ended, what the tool
    policy refused."""
    from agent_core.tools.base import Toolset
    from agent_core.tools.builtin import builtin_tools
    from workbench.engine.recording.fork import fork_toolset, recorded_root
    from workbench.engine.recording.run_service import (
        ModelSettings,
        SetupError,
        build_model,
        drive,
        fork_setup,
        prepare_fork,
    )

    start = fork_plan.parent.run_start
    # The environment's model in the parent's wire format, else the run's offline script.
    settings = fork_setup(start, ModelSettings.from_env(), api=fork_plan.parent.api).settings
    root = recorded_root(start)
    live: list[Toolset] = [builtin_tools(root)] if root is not None else []
    try:
        model = build_model(settings, start.limits)
        fork = prepare_fork(
            fork_plan, model, home, live_toolsets=live, secrets=[settings.api_key], root=root
        )
    except SetupError as exc:
        raise ToolError(str(exc)) from None
    try:
        result = await drive(fork.agent)
    finally:
        fork.writer.close()
    if result is None:
        raise ToolError("the fork ended before it started")
    toolset = fork_toolset(fork.agent)
    return {
        "run_id": result.run_id,
        "parent_run_id": fork_plan.parent.run_id,
        "fork_turn": fork_plan.turn,
        "model": model.name,
        "status": result.status,
        "reason": result.reason or None,
        **answer_fields(result.status, result.final_answer),
        "totals": result.totals.model_dump(mode="json"),
        "side_effects_refused": toolset.refused,
        "stopped": toolset.stopped,
        "trace_whole": fork.writer.failure is None,
    }
