"""Runs, failures, tokens, cost and latency by day and by model: what `workbench stats` and
the TUI's overview draw as charts.

    stats = run_stats(store, prices, days=30)
    for day in stats.by_day: ...          # every day of the window, empty days included
    for model in stats.by_model: ...      # most runs first

One aggregate query (grouping sets over the `runs` table) does the counting, whatever the
size of the store: a million runs come back as a few dozen rows, never as runs in Python.
Tokens are split into input and output (from each run's `run_end` totals) only when there
are prices to apply, since that reads every run_end in the window.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from traces.origins import RUN_KINDS

if TYPE_CHECKING:
    from traces.prices import Prices
    from traces.store import TraceStore

# The kinds counted unless asked otherwise: everything but regression samples, which
# `workbench test` measures (a sample that ends at max_turns by design is not a failure).
DEFAULT_KINDS: tuple[str, ...] = tuple(k for k in RUN_KINDS if k != "regression_sample")
DEFAULT_DAYS = 30
SPARKS = "▁▂▃▄▅▆▇█"
OK_BAR, FAILED_BAR = "█", "▒"  # runs that completed, runs that did not

# Grouping sets: (day, model) rows price the days (a price is per model), (day) and (model)
# rows carry each group's own latency percentiles, () the totals. A failure is a run that did
# not complete, as in `workbench runs --failed`. The window ends at the newest run's day.
STATS = """
WITH scoped AS (
    SELECT run_id, CAST(timezone('UTC', started_at) AS DATE) AS day,
        coalesce(model, '') AS model, status, total_tokens, duration_ms
    FROM runs
    WHERE started_at IS NOT NULL AND list_contains($origins, coalesce(origin, 'agent'))
), bounds AS (
    SELECT max(day) AS last_day FROM scoped
), windowed AS (
    SELECT s.* FROM scoped s, bounds b WHERE $days IS NULL OR s.day > b.last_day - $days
), ends AS (
    SELECT run_id, (event->'totals'->>'input_tokens')::BIGINT AS input_tokens,
        (event->'totals'->>'output_tokens')::BIGINT AS output_tokens
    FROM event_rows
    WHERE $priced AND type = 'run_end' AND problem IS NULL
        AND run_id IN (SELECT run_id FROM windowed)
)
SELECT GROUPING(day) AS no_day, GROUPING(model) AS no_model, day, model,
    count(*) AS runs,
    count(*) FILTER (WHERE status <> 'completed') AS failures,
    coalesce(sum(total_tokens), 0) AS tokens,
    coalesce(sum(e.input_tokens), 0) AS input_tokens,
    coalesce(sum(e.output_tokens), 0) AS output_tokens,
    quantile_cont(duration_ms, 0.5) AS p50_ms,
    quantile_cont(duration_ms, 0.95) AS p95_ms
FROM windowed w LEFT JOIN ends e USING (run_id)
GROUP BY GROUPING SETS ((day, model), (day), (model), ())
ORDER BY no_day, no_model, day, model
"""


@dataclass(frozen=True)
class StatsRow:
    """One day's, one model's, or all the window's runs."""

    key: str  # the day (YYYY-MM-DD), the model, or "all"
    runs: int = 0
    failures: int = 0
    tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None  # None: no price for any of its models
    p50_ms: float | None = None  # run latency (run_start to run_end), median
    p95_ms: float | None = None

    @property
    def failure_rate(self) -> float:
        return self.failures / self.runs if self.runs else 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"failure_rate": round(self.failure_rate, 4)}


@dataclass(frozen=True)
class RunStats:
    kinds: tuple[str, ...]
    first_day: str | None  # the window, by UTC day; None when there are no runs
    last_day: str | None
    total: StatsRow
    by_day: list[StatsRow] = field(default_factory=list)
    by_model: list[StatsRow] = field(default_factory=list)
    currency: str = "$"
    priced: bool = False  # prices were given: costs are known where a model has one

    def to_json(self) -> dict[str, Any]:
        return {
            "kinds": list(self.kinds),
            "first_day": self.first_day,
            "last_day": self.last_day,
            "currency": self.currency if self.priced else None,
            "total": self.total.to_json(),
            "by_day": [row.to_json() for row in self.by_day],
            "by_model": [row.to_json() for row in self.by_model],
        }


def _sum_costs(costs: Iterable[float | None]) -> float | None:
    known = [c for c in costs if c is not None]
    return sum(known) if known else None


def run_stats(
    store: TraceStore,
    prices: Prices | None = None,
    *,
    days: int | None = DEFAULT_DAYS,
    kinds: Iterable[str] = DEFAULT_KINDS,
) -> RunStats:
    """The runs of `kinds` in the `days` UTC days up to the newest one's (all days when
    None), counted by day and by model; costs from `prices` where a model has one."""
    kinds = tuple(kinds)
    priced = bool(prices)
    params = {"origins": list(kinds), "days": days, "priced": priced}
    columns, rows = store.query(STATS, params)
    found = [dict(zip(columns, row, strict=True)) for row in rows]

    def cost(row: dict[str, Any]) -> float | None:
        if prices is None or not priced or not row["model"]:
            return None
        return prices.cost(row["model"], int(row["input_tokens"]), int(row["output_tokens"]))

    def stats_row(key: str, row: dict[str, Any], amount: float | None) -> StatsRow:
        return StatsRow(
            key=key,
            runs=int(row["runs"]),
            failures=int(row["failures"]),
            tokens=int(row["tokens"]),
            input_tokens=int(row["input_tokens"]),
            output_tokens=int(row["output_tokens"]),
            cost=amount,
            p50_ms=row["p50_ms"],
            p95_ms=row["p95_ms"],
        )

    day_costs: dict[date, list[float | None]] = {}
    for row in found:
        if not row["no_day"] and not row["no_model"]:
            day_costs.setdefault(row["day"], []).append(cost(row))
    by_day: dict[date, StatsRow] = {}
    by_model: list[StatsRow] = []
    total = StatsRow("all")
    for row in found:
        if not row["no_day"] and row["no_model"]:
            day = row["day"]
            by_day[day] = stats_row(day.isoformat(), row, _sum_costs(day_costs[day]))
        elif row["no_day"] and not row["no_model"]:
            by_model.append(stats_row(row["model"] or "(no model)", row, cost(row)))
        elif row["no_day"] and row["no_model"] and row["runs"]:
            every = [c for costs in day_costs.values() for c in costs]
            total = stats_row("all", row, _sum_costs(every))
    by_model.sort(key=lambda r: (-r.runs, r.key))
    first = min(by_day) if by_day else None
    last = max(by_day) if by_day else None
    if days is not None and last is not None:
        first = last - timedelta(days=days - 1)
    filled = _every_day(by_day, first, last)
    return RunStats(
        kinds=kinds,
        first_day=first.isoformat() if first else None,
        last_day=last.isoformat() if last else None,
        total=total,
        by_day=filled,
        by_model=by_model,
        currency=prices.currency if prices is not None else "$",
        priced=priced,
    )


def _every_day(
    found: dict[date, StatsRow], first: date | None, last: date | None
) -> list[StatsRow]:
    """One row per day from `first` to `last`, a day without runs as an empty row, so a
    chart's columns are days at even steps."""
    if first is None or last is None:
        return []
    rows = []
    day = first
    while day <= last:
        rows.append(found.get(day) or StatsRow(day.isoformat()))
        day += timedelta(days=1)
    return rows


# ---------------------------------------------------------------- text charts


def sparkline(values: Sequence[float | None]) -> str:
    """One character per value, its height scaled to the largest; blank for none or 0."""
    top = max((v for v in values if v), default=0)
    if not top:
        return " " * len(values)
    return "".join(
        SPARKS[min(len(SPARKS) - 1, round(v / top * (len(SPARKS) - 1)))] if v else " "
        for v in values
    )


def runs_bar(row: StatsRow, most: int, width: int) -> str:
    """`█████▒▒`: the runs that completed, then those that failed, scaled to `most`."""
    if not row.runs or not most:
        return " " * width
    cells = max(1, round(row.runs / most * width))
    failed = min(cells, round(row.failures / most * width)) if row.failures else 0
    if row.failures and not failed:
        failed = 1 if cells > 1 else 0
    return (OK_BAR * (cells - failed) + FAILED_BAR * failed).ljust(width)
