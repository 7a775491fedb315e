"""Failing runs grouped by failure signature, offline and without a model: what
`workbench failures` prints.

    report = failure_report(store, since=week_ago)
    for group in report.groups: ...   # biggest first; group.per_day on the report's days

The grouping is one query in the store (`traces.store.failures`: the status and reason,
the first failing step's tool and error text with numbers, ids, hex, paths, quoted values
and timestamps masked, and the tools called just before it); this module gives each
group a short name, lays its runs per day on one axis of days shared by every group, and
says what changed in the set-up of its first run since the run of its task before it
(`changes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from traces.store import RunQuery
from workbench.engine.analysis.changes import Changes, changes_before

if TYPE_CHECKING:
    from traces.store import TraceStore
    from traces.store.failures import FailureGroupRow

# The most days a group's runs-per-day line spans (the newest ones).
MAX_DAYS = 60


@dataclass(frozen=True)
class FailureGroup:
    signature: str  # a short digest of the signature's parts: the group's name
    row: FailureGroupRow
    per_day: list[int]  # failing runs on each of the report's days
    # Its first run's set-up against the run of the same task before it.
    changes: Changes

    def to_json(self) -> dict[str, Any]:
        row = self.row
        return {
            "signature": self.signature,
            "status": row.status,
            "reason": row.reason,
            "step": row.step,
            "tool": row.tool,
            "error": row.error,
            "tools_before": row.tools_before,
            "runs": row.runs,
            "first_seen": _iso(row.first_seen),
            "last_seen": _iso(row.last_seen),
            "first_run": row.first_run,
            "examples": row.examples,
            "models": row.models,
            "tasks": row.tasks,
            "per_day": self.per_day,
            "changes_at_first": self.changes.to_json(),
        }


@dataclass(frozen=True)
class FailureReport:
    groups: list[FailureGroup]
    total_groups: int  # beyond the limit asked for too
    failed_runs: int
    since: datetime | None
    days: list[date]  # the days `FailureGroup.per_day` counts, oldest first

    def to_json(self) -> dict[str, Any]:
        return {
            "since": _iso(self.since),
            "failed_runs": self.failed_runs,
            "total_groups": self.total_groups,
            "days": [day.isoformat() for day in self.days],
            "groups": [group.to_json() for group in self.groups],
        }


def failure_report(
    store: TraceStore, since: datetime | None = None, examples: int = 3, limit: int = 20
) -> FailureReport:
    """The failing runs started since `since` (all when None), grouped by signature, the
    `limit` biggest groups with `examples` runs each. Regression samples are left out, as
    in `workbench runs --failed`."""
    found = store.failure_groups(RunQuery(samples=False, since=since), examples, limit)
    days = _days([row for row in found.groups], since)
    changes = changes_before(store, [row.first_run for row in found.groups])
    groups = [
        FailureGroup(row.signature, row, _on(days, row), changes[row.first_run])
        for row in found.groups
    ]
    return FailureReport(groups, found.total_groups, found.failed_runs, since, days)


def _days(rows: list[FailureGroupRow], since: datetime | None) -> list[date]:
    """Every day from `since` (else the first failure) to the last failure, at most
    MAX_DAYS of them (the newest)."""
    seen = [day for row in rows for day, _ in row.per_day]
    if not seen:
        return []
    first, last = min(seen), max(seen)
    if since is not None:
        first = min(first, since.date())
    first = max(first, last - timedelta(days=MAX_DAYS - 1))
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def _on(days: list[date], row: FailureGroupRow) -> list[int]:
    runs = dict(row.per_day)
    return [runs.get(day, 0) for day in days]


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
