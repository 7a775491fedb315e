"""The store's side of `workbench judge`: which runs a judge looks at, and what a rubric
version has judged already (its notes, `traces.annotations.JudgeRef`, that count)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from traces.store.store import TraceStore

# A judge call's own run (run_start.meta.judge): never judged itself.
JUDGE_RUN = """run_id IN (SELECT run_id FROM event_rows
    WHERE type = 'run_start' AND problem IS NULL AND (event->'meta'->'judge') IS NOT NULL)"""

# The runs started since $since (all of them for NULL), oldest first: not regression
# samples (a suite judges those) and not judge calls.
CANDIDATES = f"""
SELECT run_id FROM runs
WHERE ($since IS NULL OR started_at >= $since)
    AND coalesce(origin, 'agent') <> 'regression_sample'
    AND NOT {JUDGE_RUN}
ORDER BY started_at, run_id
"""

# What this rubric version's notes (that count) are on.
JUDGED = """
SELECT a.run_id, a.turn, a.call_id FROM annotations a JOIN annotation_records r USING (id)
WHERE a.author = $author AND try_cast(r.record->'judge'->>'version' AS INTEGER) = $version
"""


def judge_candidates(store: TraceStore, since: datetime | None) -> list[str]:
    _, rows = store.query(CANDIDATES, {"since": since})
    return [str(row[0]) for row in rows]


def judged_items(
    store: TraceStore, author: str, version: int
) -> set[tuple[str, int | None, str | None]]:
    _, rows = store.query(JUDGED, {"author": author, "version": version})
    return {(str(run), turn, call) for run, turn, call in rows}
