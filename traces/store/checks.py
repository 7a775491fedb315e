"""The store's side of `workbench check`: each rule's figure in one SQL query over the runs
started in its window (regression samples and judge calls left out), optionally of one
task or model (a case-insensitive part of its name)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from traces.store.judging import JUDGE_RUN

if TYPE_CHECKING:
    from traces.store.store import TraceStore

_WINDOW = f"""started_at >= $since
    AND ($task IS NULL OR contains(lower(coalesce(task, '')), lower($task)))
    AND ($model IS NULL OR contains(lower(coalesce(model, '')), lower($model)))
    AND coalesce(origin, 'agent') <> 'regression_sample'
    AND NOT {JUDGE_RUN}"""

_PRICE_ROWS = '[{"model": "VARCHAR", "input": "DOUBLE", "output": "DOUBLE"}]'

# Each metric: (its value, how many runs it is over); the value NULL when no run counts.
METRICS: dict[str, str] = {
    "failure_rate": f"""
SELECT avg(CASE WHEN status <> 'completed' THEN 1.0 ELSE 0.0 END), count(*)
FROM runs WHERE {_WINDOW}""",
    "p95_latency_ms": f"""
SELECT quantile_cont(duration_ms, 0.95), count(duration_ms) FROM runs WHERE {_WINDOW}""",
    # From run_end's token totals at the model's price; runs of an unpriced model left out.
    "cost_per_run": f"""
SELECT avg((coalesce(try_cast(e.event->'totals'->>'input_tokens' AS DOUBLE), 0) * p.input
        + coalesce(try_cast(e.event->'totals'->>'output_tokens' AS DOUBLE), 0) * p.output)
        / 1000000.0), count(*)
FROM (SELECT run_id, model FROM runs WHERE {_WINDOW}) r
JOIN event_rows e ON e.run_id = r.run_id AND e.type = 'run_end' AND e.problem IS NULL
JOIN (SELECT unnest(from_json($prices, '{_PRICE_ROWS}'), recursive := true)) p
    ON p.model = r.model""",
    # Annotations (that count) with the label, made in the window, on the runs it keeps.
    "label_count": """
SELECT count(*), count(DISTINCT run_id) FROM annotations
WHERE list_contains(labels, $label) AND ts >= $since
    AND run_id IN (SELECT run_id FROM runs WHERE
        ($task IS NULL OR contains(lower(coalesce(task, '')), lower($task)))
        AND ($model IS NULL OR contains(lower(coalesce(model, '')), lower($model))))""",
}


def metric_value(
    store: TraceStore,
    metric: str,
    since: datetime,
    *,
    task: str | None = None,
    model: str | None = None,
    label: str | None = None,
    prices: dict[str, tuple[float, float]] | None = None,
) -> tuple[float | None, int]:
    """The metric's value over the window and how many runs (or notes) it counts."""
    params = {"since": since, "task": task, "model": model}
    if metric == "label_count":
        params["label"] = label
    if metric == "cost_per_run":
        rows = [{"model": m, "input": i, "output": o} for m, (i, o) in (prices or {}).items()]
        params["prices"] = json.dumps(rows)
    _, found = store.query(METRICS[metric], params)
    value, counted = found[0] if found else (None, 0)
    return (float(value) if value is not None else None), int(counted or 0)
