"""How a run ended: the `run_end.status` values, and `incomplete` for a trace with no
run_end. Kept apart from `traces.events` (which re-exports them) so a command's parser and
mcp-serve's tool schemas name the statuses without loading the event models."""

from __future__ import annotations

from typing import Literal, TypeAlias, get_args

RunStatus: TypeAlias = Literal[
    "completed",
    "max_turns",
    "duplicate_tool_calls",
    "token_budget",
    "timeout",
    "cancelled",
    "error",
]
# What the store reports for a run; `incomplete` means the trace has no run_end.
StoredStatus: TypeAlias = RunStatus | Literal["incomplete"]
# Every status in the order above, for filters and checks; derived, so it cannot drift.
RUN_STATUSES: tuple[str, ...] = tuple(
    status for part in get_args(StoredStatus) for status in get_args(part)
)
