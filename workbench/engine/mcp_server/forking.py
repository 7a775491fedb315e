"""fork_run's plan and run, made by the one fork runner (`recording.fork.runner`) as
`workbench fork` makes them with no flags: the model the server's environment names (else
the offline script the run names, as the demo's runs do), and the folder the runner chooses
for new file-tool calls, its notes saying why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from traces.tree import answer_fields
from workbench.engine.mcp_server.tools import ToolError
from workbench.engine.recording.fork.plan import ForkError, ForkRequest
from workbench.engine.recording.fork.runner import ForkOptions, ForkSetup, open_fork, setup_fork
from workbench.engine.recording.running.service import ModelSettings, SetupError
from workbench.engine.recording.runs.load import Recording
from workbench.engine.recording.runs.parent import ParentRun


def setup(parent: Recording | ParentRun, request: ForkRequest, home: Path) -> ForkSetup:
    """The fork planned and its choices made; a request that does not fit is a `ToolError`."""
    try:
        return setup_fork(parent, request, ForkOptions(ModelSettings.from_env()), home)
    except (ForkError, SetupError) as exc:
        raise ToolError(str(exc)) from None


def plan_json(fork: ForkSetup, *, whole_prefix: bool = False) -> dict[str, Any]:
    """The plan a dry run answers: the edits checked, the history rebuilt, each tool's
    side-effect policy (the recorded read-only flags of tools no server started here) and
    the runner's notes."""
    plan = fork.plan
    planned = fork.dry_run(whole_prefix=whole_prefix)
    return {
        "dry_run": True,
        "parent_run_id": plan.parent.run_id,
        "turn": plan.turn,
        "model": planned.model,
        "edits": [edit.model_dump(mode="json") for edit in plan.edits],
        "messages": len(plan.messages),
        "last_message": plan.messages[-1] if plan.messages else None,
        "tools_offered": [spec.name for spec in plan.specs],
        "tool_policy": planned.to_json()["tools"],
        "notes": planned.notes,
    }


async def run_fork(fork: ForkSetup, home: Path) -> dict[str, Any]:
    """Run the fork to its end as a new run in `home`; its id, how it ended, what the tool
    policy refused, and the runner's notes."""
    try:
        outcome = await open_fork(fork, home).finish()
    except SetupError as exc:
        raise ToolError(str(exc)) from None
    result = outcome.result
    return {
        "run_id": result.run_id,
        "parent_run_id": fork.plan.parent.run_id,
        "fork_turn": fork.plan.turn,
        "model": outcome.model,
        "status": result.status,
        "reason": result.reason or None,
        **answer_fields(result.status, result.final_answer),
        "totals": result.totals.model_dump(mode="json"),
        "side_effects_refused": outcome.refused,
        "stopped": outcome.stopped,
        "trace_whole": outcome.trace_whole,
        "notes": outcome.notes,
    }
