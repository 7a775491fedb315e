"""Runs of one task side by side (`workbench compare`): who is in a group, and each run's
steps, read in SQL a window of step positions at a time.

A run's steps are what it decided and what became of it, in order: each tool call (its
turn, tool, arguments as compact JSON, and ok, error, bad arguments, missing or not run
when the model asked for it and the loop never started it), each answer (a response with
no tool calls), each model or run error it did not recover from, and its end (status).
Two steps are the same step when their `key`s are: the kind, turn, tool, arguments and
outcome (an answer's text, an error's place and kind, an end's status) — not a result's
text, which comes from the world, not from the agent, unless the caller asks for it
(`results`: `workbench why`, which can test a result by mocking it).

    members = group_members(store, run_ids)        # status, verdict, task of each
    rows = step_keys(store, run_ids, 0, 99)        # positions 0..99 of each run, keys only
    shown = step_contents(store, [(run_id, 3)])    # the texts of the few steps shown

Only the event types steps are made of are read (never a model request's messages), and
a caller holds one window of positions of the runs it still follows, however many runs
and however long they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from traces.store.run_filter import RunQuery
from traces.store.sql import JUDGED

if TYPE_CHECKING:
    from traces.store.store import TraceStore

StepKind = Literal["call", "answer", "error", "end"]

# Every step of the runs in $run_ids, numbered from 0 per run (`position`), with its key.
# A run's end comes last: from `runs` (status and reason; `incomplete` with no run_end).
_STEPS = """
WITH picked AS (
    SELECT run_id, seq, type, turn, event FROM event_rows
    WHERE batch IN (SELECT unnest(batches) FROM run_batches WHERE list_contains($run_ids, run_id))
      AND list_contains($run_ids, run_id) AND problem IS NULL
      AND type IN ('tool_start', 'tool_end', 'model_response', 'error')
), tool AS (
    -- The k-th start of a call id is paired with its k-th end (as `traces.tree` pairs them).
    SELECT run_id, seq, type, turn, event, event->>'call_id' AS call_id,
        coalesce(try_cast(event->>'ok' AS BOOLEAN), true) AS ok,
        row_number() OVER (PARTITION BY run_id, event->>'call_id', type ORDER BY seq) AS nth
    FROM picked WHERE type IN ('tool_start', 'tool_end')
), responses AS (
    SELECT run_id, seq, turn, event->'message' AS message,
        coalesce(json_array_length(CASE json_type(event->'message'->'tool_calls')
            WHEN 'ARRAY' THEN event->'message'->'tool_calls' END), 0) AS asked
    FROM picked WHERE type = 'model_response'
), asked AS (
    SELECT run_id, seq, turn, unnest(json_extract(message, '$.tool_calls[*]')) AS call,
        generate_subscripts(json_extract(message, '$.tool_calls[*]'), 1) AS sub
    FROM responses WHERE asked > 0
), all_steps AS (
    SELECT s.run_id, s.seq, 0 AS sub, s.turn, 'call' AS kind, s.event->>'name' AS tool,
        CASE WHEN coalesce(json_type(s.event->'arguments'), 'NULL') = 'NULL'
             THEN s.event->>'arguments_raw'
             ELSE json(s.event->'arguments')::VARCHAR END AS arguments,
        CASE WHEN s.event->>'parse_error' IS NOT NULL THEN 'bad_arguments'
             WHEN e.event IS NULL THEN 'missing'
             WHEN e.ok THEN 'ok' ELSE 'error' END AS outcome,
        CASE WHEN s.event->>'parse_error' IS NOT NULL THEN s.event->>'parse_error'
             WHEN NOT e.ok AND e.event->>'error' IS NOT NULL
             THEN e.event->>'error' || ': ' || coalesce(e.event->>'result', '')
             ELSE e.event->>'result' END AS text
    FROM tool s LEFT JOIN tool e ON e.run_id = s.run_id AND e.type = 'tool_end'
        AND e.call_id = s.call_id AND e.nth = s.nth
    WHERE s.type = 'tool_start'
    UNION ALL
    SELECT a.run_id, a.seq, a.sub, a.turn, 'call', a.call->'function'->>'name',
        coalesce(json(try_cast(a.call->'function'->>'arguments' AS JSON))::VARCHAR,
                 a.call->'function'->>'arguments'),
        'not_run', NULL
    FROM asked a ANTI JOIN tool t
        ON t.run_id = a.run_id AND t.type = 'tool_start' AND t.call_id = a.call->>'id'
    UNION ALL
    SELECT run_id, seq, 0, turn, 'answer', NULL, NULL, 'answered', message->>'content'
    FROM responses WHERE asked = 0
    UNION ALL
    SELECT p.run_id, p.seq, 0, p.turn, 'error', NULL, NULL,
        coalesce(p.event->>'where', '?') || ' ' || coalesce(p.event->>'kind', '?'),
        p.event->>'message'
    FROM picked p
    WHERE p.type = 'error' AND coalesce(p.event->>'where', '') NOT IN ('tool', 'mcp')
      -- A failed attempt's error is recovered from by a later response of its turn.
      AND NOT EXISTS (SELECT 1 FROM responses r
                      WHERE r.run_id = p.run_id AND r.turn = p.turn AND r.seq > p.seq)
    UNION ALL
    SELECT run_id, 9223372036854775807, 0, NULL, 'end', NULL, NULL, status,
        coalesce(reason, '')
    FROM runs WHERE list_contains($run_ids, run_id)
), steps AS (
    SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY seq, sub) - 1 AS position
    FROM all_steps
)
"""
# The steps at positions $first to $last, keys only, by run and position; a call's result
# text is part of its key when $results.
STEP_KEYS = f"""{_STEPS}
SELECT run_id, position, turn, kind, tool, outcome,
    left(md5(concat_ws(chr(31), kind, coalesce(turn::VARCHAR, ''), coalesce(tool, ''),
        coalesce(arguments, ''), outcome,
        CASE WHEN kind = 'answer' OR (kind = 'call' AND $results)
             THEN coalesce(text, '') ELSE '' END)), 16) AS key
FROM steps WHERE position BETWEEN $first AND $last
ORDER BY run_id, position
"""
# The steps named in $wanted (`run_id` chr(31) `position`), with their texts (each cut to
# $max_text characters: a tool result may be megabytes).
STEP_CONTENTS = f"""{_STEPS}
SELECT run_id, position, CASE WHEN seq = 9223372036854775807 THEN NULL ELSE seq END,
    turn, kind, tool, outcome, left(arguments, $max_text), left(text, $max_text)
FROM steps WHERE list_contains($wanted, run_id || chr(31) || position::VARCHAR)
"""
GROUP_MEMBERS = f"""
SELECT run_id, status, {JUDGED} AS judged, task_fingerprint, task, started_at FROM runs
WHERE list_contains($run_ids, run_id) ORDER BY started_at NULLS LAST, run_id
"""
# The runs sharing $run_id's task fingerprint (only itself when it has none).
TASK_RUNS = """
SELECT run_id FROM runs WHERE run_id = $run_id OR task_fingerprint = (
    SELECT task_fingerprint FROM runs WHERE run_id = $run_id)
"""
# The runs a proxy captured under `X-Workbench-Run: $name` (their run_start's meta.name).
NAMED_RUNS = """
SELECT DISTINCT run_id FROM event_rows
WHERE type = 'run_start' AND problem IS NULL AND event->'meta'->>'name' = $name
"""
# The samples of case $case in the newest stored run of suite $suite (a suite's name, or
# the id or an id prefix of one stored suite run).
CASE_RUNS = """
WITH suite_run AS (
    SELECT suite_run_id FROM regress_runs
    WHERE suite = $suite OR starts_with(suite_run_id, $suite)
    ORDER BY suite = $suite DESC, started DESC LIMIT 1
)
SELECT run_id FROM regress_samples
WHERE case_id = $case AND run_id IS NOT NULL
  AND suite_run_id IN (SELECT suite_run_id FROM suite_run)
"""
HAS_SUITES = "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'regress_runs'"


@dataclass(frozen=True)
class Member:
    """A run of a group: how it ended and, for a regression sample, its case's verdict."""

    run_id: str
    status: str
    judged: str | None  # passed, failed, error (a regression sample), else None
    task_fingerprint: str | None
    task: str | None
    started_at: datetime | None

    @property
    def passed(self) -> bool:
        """A sample passes when its case says so (a suite may stop it at max_turns by
        design); any other run when it completed."""
        return self.judged == "passed" if self.judged is not None else self.status == "completed"


@dataclass(frozen=True)
class StepKey:
    run_id: str
    position: int
    turn: int | None
    kind: StepKind
    tool: str | None
    outcome: str
    key: str


@dataclass(frozen=True)
class StepContent:
    run_id: str
    position: int
    seq: int | None  # the event the step is (a call's start); None for a run's end
    turn: int | None
    kind: StepKind
    tool: str | None
    outcome: str  # ok, error, bad_arguments, missing, not_run; answered; the error; the status
    arguments: str | None  # a call's, as compact JSON (as sent, when they did not parse)
    text: str | None  # a call's result or error, an answer, an error message, an end's reason


def group_members(store: TraceStore, run_ids: list[str]) -> list[Member]:
    """The runs of `run_ids` the store holds, oldest first."""
    _, rows = store.query(GROUP_MEMBERS, {"run_ids": run_ids})
    return [Member(*row) for row in rows]


def step_keys(
    store: TraceStore, run_ids: list[str], first: int, last: int, *, results: bool = False
) -> list[StepKey]:
    """The steps at positions `first` to `last` of the runs, by run and position; with
    `results`, two calls whose results' texts differ are two steps."""
    params = {"run_ids": run_ids, "first": first, "last": last, "results": results}
    _, rows = store.query(STEP_KEYS, params)
    return [StepKey(*row) for row in rows]


def step_contents(
    store: TraceStore, wanted: list[tuple[str, int]], max_text: int = 4000
) -> dict[tuple[str, int], StepContent]:
    """The steps named by (run id, position), with their texts cut to `max_text`."""
    if not wanted:
        return {}
    params: dict[str, Any] = {
        "max_text": max_text,
        "run_ids": sorted({run_id for run_id, _ in wanted}),
        "wanted": [f"{run_id}\x1f{position}" for run_id, position in wanted],
    }
    _, rows = store.query(STEP_CONTENTS, params)
    found = [StepContent(*row) for row in rows]
    return {(step.run_id, step.position): step for step in found}


def task_runs(store: TraceStore, run_id: str) -> list[str]:
    """The runs of `run_id`'s task: those sharing its task fingerprint."""
    _, rows = store.query(TASK_RUNS, {"run_id": run_id})
    return [row[0] for row in rows]


def named_runs(store: TraceStore, name: str) -> list[str]:
    """The runs captured under `X-Workbench-Run: name`."""
    _, rows = store.query(NAMED_RUNS, {"name": name})
    return [row[0] for row in rows]


def case_runs(store: TraceStore, suite: str, case: str) -> list[str]:
    """The samples of `case` in the newest stored run of `suite` (none stored: [])."""
    _, found = store.query(HAS_SUITES)
    if not found or not found[0][0]:
        return []
    _, rows = store.query(CASE_RUNS, {"suite": suite, "case": case})
    return [row[0] for row in rows]


def labelled_runs(store: TraceStore, label: str) -> list[str]:
    """The runs annotated with `label` (on the run, a turn or a call)."""
    clause, params = RunQuery(label=label).where()
    _, rows = store.query(f"SELECT run_id FROM runs {clause}", params)
    return [row[0] for row in rows]
