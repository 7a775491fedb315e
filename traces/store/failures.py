"""Failing runs grouped by a failure signature, in one set-based query (`workbench failures`).

A run's signature is what failed it with the parts that differ from one occurrence to the
next masked out: its status and end reason, the kind of its first failing step
(`sql.FAILURE_EVENT`, the same step `TraceStore.first_failure` finds), that step's tool,
its error text, and the names of the (up to) three tools called just before it. The
masking is DuckDB's `regexp_replace`, so a store of a million runs is grouped in SQL with
no run's events brought into Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from traces.store.sql import FAILURE_EVENT

if TYPE_CHECKING:
    from traces.store.db import duckdb

# The volatile parts of an error text, in the order they are masked (earlier patterns
# first: a quoted path is one quoted value, a timestamp is not three numbers). RE2 syntax.
MASKS: tuple[tuple[str, str], ...] = (
    # A quoted value: the opening quote not inside a word (so "the run's" is no quote).
    (r"""(^|[^\w])'[^'\n]*'""", r"\1<str>"),
    (r'"[^"\n]*"', "<str>"),
    (r"\b[a-z][a-z0-9+.-]*://[^\s'\"]+", "<url>"),
    (r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?", "<time>"),
    (r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<id>"),
    (r"(?i)\b(0x)?[0-9a-f]{8,}\b", "<hex>"),
    # An id with a prefix: call_0, req-8f3a2b, toolu_01A (a word, a separator, a digit).
    (r"(?i)\b[a-z]+[_-][a-z0-9_-]*[0-9][a-z0-9_-]*\b", "<id>"),
    (r"[A-Za-z]:\\[^\s'\"]+", "<path>"),
    (r"[\w.~-]*(/[\w.@+-]+)+/?", "<path>"),
    (r"\d+(\.\d+)?", "<n>"),
)


def masked(expression: str) -> str:
    """The SQL that masks the volatile parts of the text `expression` (see `MASKS`)."""
    for pattern, replacement in MASKS:
        expression = f"regexp_replace({expression}, '{_quoted(pattern)}', '{replacement}', 'g')"
    return expression


# A signature's parts; '' where a run has none (so they join and group as equal).
SIGNATURE = ("status", "reason", "step", "tool", "error", "tools_before")
_KEY = ", ".join(SIGNATURE)
# The signature's name: eight hex digits of sha256 over its parts joined by the unit
# separator, the tools before it last (the same for the same failure in any store, so
# `workbench check` can remember it and `workbench runs --signature` find its runs).
SIGNATURE_DIGEST = (
    "left(sha256(array_to_string("
    "list_concat([status, reason, step, tool, error], tools_before), chr(31))), 8)"
)


def signed_runs_sql(where: str) -> str:
    """The failing runs `where` keeps over `runs` (`run_filter.RunQuery.where`, its failed
    filter on), one row each: run_id, model, task, started_at, the signature's parts
    (`SIGNATURE`) and its name (`signature`)."""
    return f"""
WITH failed AS (
    SELECT run_id, status, reason, model, task, started_at FROM runs {where}
), steps AS (
    -- Each failed run's first failing step: what it was, its tool and its error text.
    SELECT run_id, arg_min({{
        'seq': seq,
        'call_id': event->>'call_id',
        'step': CASE type WHEN 'error' THEN 'error in ' || coalesce(event->>'where', '?')
                          WHEN 'tool_end' THEN 'tool error'
                          WHEN 'tool_start' THEN 'bad arguments' ELSE 'end' END,
        'tool': CASE WHEN type IN ('tool_end', 'tool_start') THEN event->>'name' END,
        'text': CASE type
            WHEN 'error' THEN coalesce(event->>'kind', '') || ': '
                || coalesce(event->>'message', '')
            WHEN 'tool_end' THEN coalesce(event->>'error', 'error') || ': '
                || left(coalesce(event->>'result', ''), 500)
            WHEN 'tool_start' THEN event->>'parse_error' END
    }}, seq) AS first
    FROM event_rows
    -- A run's end is its last event, so it is its first failure only when nothing failed
    -- before it: such runs have no row here and are 'end' below, with no run_end read
    -- (reading the JSON of events is most of what grouping costs).
    WHERE problem IS NULL AND run_id IN (SELECT run_id FROM failed)
        AND type IN ('error', 'tool_end', 'tool_start')
        AND {FAILURE_EVENT}
    GROUP BY run_id
), before AS (
    -- The tools called just before it (the failing call itself left out), oldest first.
    SELECT run_id, list(name ORDER BY seq) AS tools_before FROM (
        SELECT t.run_id, t.seq, t.event->>'name' AS name,
            row_number() OVER (PARTITION BY t.run_id ORDER BY t.seq DESC) AS back
        FROM event_rows t JOIN steps s ON s.run_id = t.run_id
        WHERE t.type = 'tool_start' AND t.problem IS NULL AND t.seq < s.first.seq
          AND coalesce(t.event->>'call_id', '') <> coalesce(s.first.call_id, '')
    ) WHERE back <= 3 GROUP BY run_id
), unmasked AS MATERIALIZED (
    SELECT f.run_id, f.model, f.task, f.started_at,
        coalesce(f.status, '') AS status,
        coalesce(left(f.reason, 500), '') AS raw_reason,
        coalesce(s.first.step, 'end') AS step,
        coalesce(s.first.tool, '') AS tool,
        coalesce(left(s.first.text, 500), '') AS raw_error,
        coalesce(b.tools_before, []::VARCHAR[]) AS tools_before
    FROM failed f LEFT JOIN steps s USING (run_id) LEFT JOIN before b USING (run_id)
), texts AS (
    -- Each distinct text masked once: runs often repeat a reason or an error word for word.
    SELECT raw, {masked("raw")} AS masked FROM (
        SELECT raw_reason AS raw FROM unmasked UNION SELECT raw_error FROM unmasked)
), parts AS (
    SELECT u.run_id, u.model, u.task, u.started_at, u.status, r.masked AS reason, u.step,
        u.tool, e.masked AS error, u.tools_before
    FROM unmasked u JOIN texts r ON r.raw = u.raw_reason JOIN texts e ON e.raw = u.raw_error
)
SELECT *, {SIGNATURE_DIGEST} AS signature FROM parts
"""


def signatures_sql(where: str) -> str:
    """Each failing run `where` keeps and its signature's name."""
    return f"SELECT run_id, signature FROM ({signed_runs_sql(where)})"


def failure_groups_sql(where: str) -> str:
    """The groups of the runs `where` keeps over `runs` (`run_filter.RunQuery.where`, its
    failed filter on), most runs first: one row per signature (see `FailureGroupRow`)."""
    return f"""
WITH signed AS MATERIALIZED ({signed_runs_sql(where)}
), groups AS (
    SELECT {_KEY}, any_value(signature) AS signature, count(*) AS runs,
        min(started_at) AS first_seen, max(started_at) AS last_seen,
        arg_min(run_id, started_at) AS first_run,
        max_by(run_id, started_at, $examples) AS examples,
        list_sort(list(DISTINCT model) FILTER (WHERE model IS NOT NULL)) AS models,
        count(DISTINCT task) AS tasks
    FROM signed GROUP BY {_KEY}
), days AS (
    SELECT signature, list({{'day': day, 'runs': runs}} ORDER BY day) AS per_day FROM (
        SELECT signature, started_at::DATE AS day, count(*) AS runs
        FROM signed WHERE started_at IS NOT NULL GROUP BY ALL
    ) GROUP BY ALL
)
SELECT {_KEY}, runs, first_seen, last_seen, first_run, examples, models, tasks,
    coalesce(per_day, []) AS per_day,
    count(*) OVER () AS groups, sum(runs) OVER () AS failed_runs, signature
FROM groups LEFT JOIN days USING (signature)
ORDER BY runs DESC, last_seen DESC NULLS LAST, {_KEY}
LIMIT $limit
"""


@dataclass(frozen=True)
class FailureGroupRow:
    """One failure signature and the failing runs that share it."""

    status: str
    reason: str  # masked
    step: str  # the first failing step: "tool error", "bad arguments", "error in model", "end"
    tool: str | None  # that step's tool, if a tool's
    error: str  # its error text, masked ("" for an end that is the only failure)
    tools_before: list[str]
    runs: int
    first_seen: datetime | None
    last_seen: datetime | None
    first_run: str
    examples: list[str]  # the newest runs, newest first
    models: list[str]
    tasks: int  # how many different tasks
    per_day: list[tuple[date, int]]  # failing runs per day, days with none left out
    signature: str  # the signature's name (`SIGNATURE_DIGEST`)


@dataclass(frozen=True)
class FailureGroups:
    groups: list[FailureGroupRow]  # the biggest, up to the limit asked
    total_groups: int  # all the signatures, beyond the limit too
    failed_runs: int


def failure_groups(
    cur: duckdb.DuckDBPyConnection, where: str, params: dict[str, Any], examples: int, limit: int
) -> FailureGroups:
    rows = cur.execute(
        failure_groups_sql(where), params | {"examples": examples, "limit": limit}
    ).fetchall()
    groups = [
        FailureGroupRow(
            status=row[0],
            reason=row[1],
            step=row[2],
            tool=row[3] or None,
            error=row[4],
            tools_before=list(row[5]),
            runs=int(row[6]),
            first_seen=row[7],
            last_seen=row[8],
            first_run=row[9],
            examples=list(row[10]),
            models=list(row[11]),
            tasks=int(row[12]),
            per_day=[(item["day"], int(item["runs"])) for item in row[13]],
            signature=row[16],
        )
        for row in rows
    ]
    total = int(rows[0][14]) if rows else 0
    failed = int(rows[0][15]) if rows else 0
    return FailureGroups(groups, total, failed)


def _quoted(text: str) -> str:
    return text.replace("'", "''")


# For each of $run_ids, the latest run of the same task started before it (NULL for none):
# what `workbench failures` compares a group's first run with. The same task here is the
# same task text, not `task_fingerprint`: the fingerprint holds the system prompt and the
# tool names, so by it a run whose prompt or tools changed would have no run before it, and
# those changes, the ones `changes.py` is there to name, could never be named.
RUN_BEFORE_OF_TASK = """
SELECT r.run_id, (
    SELECT arg_max(p.run_id, p.started_at) FROM runs p
    WHERE p.task = r.task AND p.started_at < r.started_at AND p.run_id <> r.run_id
) FROM runs r WHERE list_contains($run_ids, r.run_id)
"""
