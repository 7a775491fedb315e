"""Which runs a listing keeps: the one filter behind `workbench runs`, the TUI's runs list
and `mcp-serve`'s list, as SQL against the `runs` table (it may hold a million runs).

What counts as a failed run is decided here and only here (`FAILED_RUN`): a run that did
not complete, except a regression sample unless the kinds asked for name it or samples are
asked for (samples that stop at `max_turns` are the suite's design, not failures to debug),
and never a sample that passed its case (`regress_samples.passed`).

The lists people read (`runs`, the TUI, `list_runs`) fold regression samples under their
suite run (`samples=False`): a sample is listed only when samples or their kind are asked
for, and the listing says how many it folded (`RunQuery.folded_samples`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from traces.store.failures import signed_runs_sql

SAMPLE = "coalesce(origin, 'agent') = 'regression_sample'"
# Failures the failed filter shows when neither a kind nor samples are asked for: every kind
# but samples.
FAILED_RUN = f"""(status <> 'completed'
    AND ($origins IS NOT NULL OR coalesce($samples, false) OR NOT {SAMPLE})
    AND (coalesce(origin, 'agent') <> 'regression_sample' OR run_id NOT IN (
        SELECT run_id FROM regress_samples WHERE passed AND run_id IS NOT NULL)))"""

_BASE = f"""
WHERE ($status IS NULL OR status = $status)
    AND (NOT $failed_only OR {FAILED_RUN})
    AND ($text IS NULL OR contains(lower(coalesce(task, '')), lower($text))
         OR starts_with(run_id, $text))
    AND ($origins IS NULL OR list_contains($origins, coalesce(origin, 'agent')))
    AND ($run_ids IS NULL OR list_contains($run_ids, run_id))
    AND (coalesce($samples, true) OR $origins IS NOT NULL OR NOT {SAMPLE})"""

_PRICE_ROWS = '[{"model": "VARCHAR", "input": "DOUBLE", "output": "DOUBLE"}]'
# A run's cost from its run_end totals and the price of its model (per million tokens).
_COST = f"""run_id IN (
    SELECT r.run_id FROM event_rows e JOIN runs r ON r.run_id = e.run_id
    JOIN (SELECT unnest(from_json($prices, '{_PRICE_ROWS}'), recursive := true)) p
        ON p.model = r.model
    WHERE e.type = 'run_end' AND e.problem IS NULL AND (
        coalesce(try_cast(e.event->'totals'->>'input_tokens' AS DOUBLE), 0) * p.input
        + coalesce(try_cast(e.event->'totals'->>'output_tokens' AS DOUBLE), 0) * p.output
    ) / 1000000.0 OP)"""

# Each optional filter's clause, added only when the filter is given (a clause that is
# always there costs a scan of the events even when it keeps every run). A JSON field
# compared with a parameter is in parentheses: DuckDB 1.5 reads `event->>'name' = $tool`
# otherwise as a cast of the whole event to a number (`workbench runs --tool` failed).
_CLAUSES: dict[str, str] = {
    "model": "contains(lower(coalesce(model, '')), lower($model))",
    "since": "started_at >= $since",
    "task": "task = $task",
    "task_fingerprint": "task_fingerprint = $task_fingerprint",
    "until": "started_at < $until",
    "min_tokens": "total_tokens >= $min_tokens",
    "max_tokens": "total_tokens <= $max_tokens",
    "min_duration_ms": "duration_ms >= $min_duration_ms",
    "max_duration_ms": "duration_ms <= $max_duration_ms",
    "tool": """run_id IN (SELECT run_id FROM event_rows
        WHERE type = 'tool_start' AND problem IS NULL AND (event->>'name') = $tool)""",
    "error_kind": """run_id IN (SELECT run_id FROM event_rows
        WHERE type = 'error' AND problem IS NULL AND (event->>'kind') = $error_kind)""",
    "min_cost": _COST.replace("OP", ">= $min_cost"),
    "max_cost": _COST.replace("OP", "<= $max_cost"),
    # Annotations that count (`notes_sql`: no tombstone removed them), on the run or on
    # any of its turns and calls.
    "label": "run_id IN (SELECT run_id FROM annotations WHERE list_contains(labels, $label))",
    "unreviewed": "(NOT $unreviewed OR run_id NOT IN (SELECT run_id FROM annotations))",
    "session": "session = $session",
}
# How `score` compares an annotation's score with its value: a closed set, never user text.
SCORE_OPERATORS = ("<=", ">=", "<", ">", "=")


@dataclass(frozen=True)
class RunQuery:
    """What a runs listing keeps; every field left as None keeps all runs."""

    status: str | None = None
    text: str | None = None
    failed_only: bool = False
    origins: tuple[str, ...] | None = None  # run_start.origin values
    run_ids: tuple[str, ...] | None = None
    # Regression samples: None lists them as any run (but not as failures), False folds
    # them (listed only when `origins` names them), True lists them, failures included.
    samples: bool | None = None
    model: str | None = None  # in the model name as recorded, any case
    task: str | None = None  # exactly this task text
    task_fingerprint: str | None = None  # runs of one task (`runs.task_fingerprint`)
    since: datetime | None = None  # started at or after
    until: datetime | None = None  # started before
    min_tokens: int | None = None
    max_tokens: int | None = None
    min_duration_ms: float | None = None  # the run's duration (`runs.duration_ms`)
    max_duration_ms: float | None = None
    tool: str | None = None  # called this tool at least once
    error_kind: str | None = None  # recorded an error event of this kind
    min_cost: float | None = None  # needs `prices`
    max_cost: float | None = None
    label: str | None = None  # annotated with this label (on the run, a turn or a call)
    unreviewed: bool | None = None  # True: no annotation at all
    score: tuple[str, str, float] | None = None  # (name, one of SCORE_OPERATORS, value)
    session: str | None = None  # part of this session (`runs.session`, a whole id)
    # The runs of one failure group (`workbench failures`): its eight hex digits, or their
    # start. Only failed runs have a signature, so this keeps failed runs only.
    signature: str | None = None
    # Per model name: input and output price per million tokens (runs of an unpriced model
    # never pass a cost filter).
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        status: str | None = None,
        text: str | None = None,
        failed_only: bool = False,
        origins: Iterable[str] | None = None,
        run_ids: Iterable[str] | None = None,
        **more: Any,
    ) -> RunQuery:
        return cls(
            status=status,
            text=text or None,
            failed_only=failed_only,
            origins=tuple(origins) if origins is not None else None,
            run_ids=tuple(run_ids) if run_ids is not None else None,
            **more,
        )

    def folded_samples(self) -> RunQuery | None:
        """The regression samples this listing folds away, as a query of their own (to
        count them); None when it folds none."""
        if self.samples is not False or self.origins is not None:
            return None
        return replace(self, origins=("regression_sample",), samples=None)

    def where(self) -> tuple[str, dict[str, Any]]:
        """The WHERE clause over `runs` and its parameters."""
        params: dict[str, Any] = {
            "status": self.status,
            "text": self.text or None,
            "failed_only": self.failed_only,
            "origins": list(self.origins) if self.origins is not None else None,
            "run_ids": list(self.run_ids) if self.run_ids is not None else None,
            "samples": self.samples,
        }
        clauses = [_BASE]
        for name, clause in _CLAUSES.items():
            value = getattr(self, name)
            if value is None:
                continue
            clauses.append(f"    AND {clause}")
            params[name] = value
        if self.score is not None:
            name, operator, value = self.score
            if operator not in SCORE_OPERATORS:
                raise ValueError(f"score operator {operator!r} is not one of {SCORE_OPERATORS}")
            clauses.append(
                "    AND run_id IN (SELECT run_id FROM annotation_scores "
                f"WHERE name = $score_name AND value {operator} $score_value)"
            )
            params |= {"score_name": name, "score_value": value}
        if self.signature is not None:
            # Signed over the runs the rest of the filter keeps, failed ones only: the
            # runs `workbench failures` counts in the group, under the same filters.
            kept = "\n".join(clauses) + f"\n    AND {FAILED_RUN}"
            clauses.append(
                f"    AND run_id IN (SELECT run_id FROM ({signed_runs_sql(kept)}) "
                "WHERE starts_with(signature, lower($signature)))"
            )
            params["signature"] = self.signature.strip()
        if self.min_cost is not None or self.max_cost is not None:
            params["prices"] = json.dumps(
                [
                    {"model": model, "input": rates[0], "output": rates[1]}
                    for model, rates in self.prices.items()
                ]
            )
        return "\n".join(clauses) + "\n", params
