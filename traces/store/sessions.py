"""Sessions: the runs of one conversation or agent session, grouped by `runs.session` (set
at ingest from the run_start's `meta.session_id`: `ingest_sql.INSERT_TOUCHED_RUNS`), each
with its totals and how its runs ended."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from traces.store.db import duckdb
from traces.store.opening import AmbiguousRunError, UnknownRunError

SESSIONS = """
SELECT session, count(*), min(started_at), max(coalesce(ended_at, started_at)),
    sum(turns), sum(tool_calls), sum(total_tokens), sum(duration_ms),
    list(status ORDER BY started_at, run_id), arg_min(task, started_at)
FROM runs
WHERE session IS NOT NULL AND ($session IS NULL OR session = $session)
GROUP BY session
ORDER BY max(started_at) DESC NULLS LAST, session
LIMIT $limit
"""
SESSIONS_BY_PREFIX = """
SELECT DISTINCT session FROM runs WHERE starts_with(session, $prefix) ORDER BY 1 LIMIT 6
"""


@dataclass(frozen=True)
class SessionRow:
    """One session: how many runs, when, their totals, and how many ended how."""

    session: str
    runs: int
    first_at: datetime | None  # its first run's start
    last_at: datetime | None  # its last run's end (or start, while it has no end)
    turns: int
    tool_calls: int
    total_tokens: int
    duration_ms: float  # its runs' durations added up
    statuses: dict[str, int]  # run status → runs, in the order the first of each came
    task: str | None  # its first run's task

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        for key in ("first_at", "last_at"):
            out[key] = out[key].isoformat() if out[key] is not None else None
        return out


def sessions(
    cur: duckdb.DuckDBPyConnection, session: str | None = None, limit: int = 100
) -> list[SessionRow]:
    """Sessions, the latest started first (only `session` when given)."""
    rows = cur.execute(SESSIONS, {"session": session, "limit": limit}).fetchall()
    return [
        SessionRow(
            session=name,
            runs=int(runs),
            first_at=first,
            last_at=last,
            turns=int(turns or 0),
            tool_calls=int(calls or 0),
            total_tokens=int(tokens or 0),
            duration_ms=float(duration or 0.0),
            statuses=dict(Counter(statuses)),
            task=task,
        )
        for name, runs, first, last, turns, calls, tokens, duration, statuses, task in rows
    ]


def resolve_session(cur: duckdb.DuckDBPyConnection, prefix: str) -> str:
    """The session that `prefix` names (whole, or the start of one id); raises when none
    or several match."""
    prefix = prefix.strip()
    found = [row[0] for row in cur.execute(SESSIONS_BY_PREFIX, {"prefix": prefix}).fetchall()]
    if prefix in found:
        return prefix
    if not prefix or not found:
        raise UnknownRunError(f"no session '{prefix}'; `workbench sessions` lists them")
    if len(found) > 1:
        shown = ", ".join(found[:5])
        raise AmbiguousRunError(f"'{prefix}' starts several sessions ({shown}); give more of it")
    return str(found[0])
