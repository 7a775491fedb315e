"""One row of the `runs` table as the store reads it (`sql.RUN_COLUMNS`, in that order)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class RunRow:
    run_id: str
    started_at: datetime | None
    ended_at: datetime | None
    task: str | None
    model: str | None
    status: str  # a RunState: one of RUN_STATUSES
    turns: int
    model_calls: int
    tool_calls: int
    tool_errors: int
    total_tokens: int
    duration_ms: float | None
    parent_run_id: str | None
    fork_turn: int | None
    final_answer: str | None
    reason: str | None
    source_path: str | None
    origin: str = "agent"  # a RunOrigin; "agent" for a run whose run_start is missing
    task_fingerprint: str | None = None  # runs of one task share it; None without a run_start
    session: str | None = None  # the conversation or agent session it is part of, if any
    judged: str | None = None  # a regression sample's case verdict: passed, failed, error

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        for key in ("started_at", "ended_at"):
            out[key] = out[key].isoformat() if out[key] is not None else None
        return out
