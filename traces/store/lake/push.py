"""`workbench push`: append the home store's finished runs to the lake, idempotently.

What the lake holds of a run decides what is sent: its events past the highest seq the lake
has, and a new `run_rows` row when the run has more events than the lake's latest row of it
(so pushing twice adds nothing, a run that grew adds only what is new). A batch of runs —
their events and their run rows — is one lake transaction: a push killed mid-way leaves
whole batches, and the next push finishes the rest. Annotations (by id) and suite results
(by suite run id) follow the same rule. Nothing is ever updated or deleted here
(`compact` is the one writer that does).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from traces.redact import Redactor
from traces.store.db import duckdb
from traces.store.lake.config import LakeConfig, LakeError
from traces.store.lake.connect import attach, scrubbed
from traces.store.lake.push_redacted import insert_redacted
from traces.store.lake.schema import LAKE, ensure_tables, lake_tables, local_tables
from traces.store.progress import Progress

T = TypeVar("T")

# Events per lake commit: a commit costs 0.3-1.5 s (the catalog round trips and a Parquet
# file per table), so throughput is set by batch size (issue 40: 1k-row commits 3k rows/s,
# 100k-row commits 29k rows/s); a batch this size keeps a killed push's loss small.
BATCH_EVENTS = 50_000
# Transaction conflicts (another writer committed first) are retried this often, with
# exponential backoff from RETRY_FIRST_S.
RETRIES = 6
RETRY_FIRST_S = 0.2


@dataclass
class PushReport:
    runs: int = 0  # runs sent (new, or grown)
    events: int = 0
    annotations: int = 0
    suite_runs: int = 0
    up_to_date: int = 0  # runs chosen that the lake already held whole


_CHOSEN = """
CREATE OR REPLACE TEMP TABLE push_chosen AS
SELECT run_id, events, started_at FROM main.runs
WHERE status <> 'incomplete'
  AND ($all OR list_contains($run_ids, run_id))
  AND ($since IS NULL OR started_at >= $since)
"""
_LAKE_HAS = f"""
CREATE OR REPLACE TEMP TABLE push_lake_has AS
SELECT run_id, max(seq) AS top FROM {LAKE}.event_rows
WHERE run_id IN (SELECT run_id FROM push_chosen) GROUP BY run_id
"""
_TODO = f"""
SELECT c.run_id, c.events FROM push_chosen c
WHERE NOT EXISTS (
    SELECT 1 FROM {LAKE}.run_rows r WHERE r.run_id = c.run_id AND r.events >= c.events)
ORDER BY c.started_at, c.run_id
"""
# What each table sends (its rows aliased `t`): the same rows whether or not they are
# redacted on the way (`push_redacted`).
_EVENTS_WHERE = """t.run_id IN (SELECT unnest($run_ids)) AND t.problem IS NULL
  AND t.seq > coalesce((SELECT top FROM push_lake_has h WHERE h.run_id = t.run_id), -1)"""
_RUN_ROWS_WHERE = "t.run_id IN (SELECT unnest($run_ids))"
_ANNOTATIONS_WHERE = f"""t.problem IS NULL AND t.run_id IN (SELECT run_id FROM push_chosen)
  AND t.id NOT IN (SELECT id FROM {LAKE}.annotation_rows
                   WHERE run_id IN (SELECT run_id FROM push_chosen))"""
_EVENTS = f"""
INSERT INTO {LAKE}.event_rows
SELECT * REPLACE (0 AS batch) FROM main.event_rows t WHERE {_EVENTS_WHERE}
"""
_RUN_ROWS = f"INSERT INTO {LAKE}.run_rows SELECT *, now() FROM main.runs t WHERE {_RUN_ROWS_WHERE}"
_ANNOTATIONS = f"""
INSERT INTO {LAKE}.annotation_rows SELECT * FROM main.annotation_rows t WHERE {_ANNOTATIONS_WHERE}
"""
# Suite runs with a sample among the chosen runs (all of them on `push --all`).
_SUITES = f"""
CREATE OR REPLACE TEMP TABLE push_suites AS
SELECT suite_run_id FROM main.regress_runs
WHERE ($all OR suite_run_id IN (
        SELECT suite_run_id FROM main.regress_samples
        WHERE run_id IN (SELECT run_id FROM push_chosen)))
  AND suite_run_id NOT IN (SELECT suite_run_id FROM {LAKE}.regress_runs)
"""
_SUITE_TABLES = ("regress_runs", "regress_cases", "regress_samples")


def push(
    cur: duckdb.DuckDBPyConnection,
    config: LakeConfig,
    run_ids: Iterable[str] | None = None,
    since: datetime | None = None,
    progress: Progress | None = None,
    batch_events: int = BATCH_EVENTS,
    redactor: Redactor | None = None,
) -> PushReport:
    """Push the finished runs of the store `cur` reads (`run_ids`, else all; `since`: those
    started since then) to the lake, about `batch_events` events a commit, their texts
    redacted with `redactor`'s patterns (the home's: `traces.home.home_redactor`)."""
    attach(cur, config, read_only=False)
    try:
        return _push(cur, config, run_ids, since, progress, batch_events, redactor)
    finally:
        cur.execute(f"DETACH {LAKE}")


def _push(
    cur: duckdb.DuckDBPyConnection,
    config: LakeConfig,
    run_ids: Iterable[str] | None,
    since: datetime | None,
    progress: Progress | None,
    batch_events: int,
    redactor: Redactor | None,
) -> PushReport:
    report = PushReport()
    # Traces are redacted as they are written; only patterns the home has (some added since,
    # maybe) need the rows rewritten on their way out. Without any, the rows go as they are,
    # set-based SQL from the store to the lake: the fast path, and the usual one.
    send = _sent if redactor is None or not redactor.patterns else _redacting(redactor)
    every = run_ids is None
    retrying(cur, config, lambda: ensure_tables(cur))
    params = {"all": every, "run_ids": list(run_ids or []), "since": since}
    cur.execute(_CHOSEN, params)
    cur.execute(_LAKE_HAS)
    todo = [(str(run_id), int(events)) for run_id, events in cur.execute(_TODO).fetchall()]
    chosen = int((cur.execute("SELECT count(*) FROM push_chosen").fetchone() or (0,))[0])
    report.up_to_date = chosen - len(todo)
    total = sum(events for _, events in todo) or 1
    sent = 0
    for batch in _batches(todo, batch_events):
        ids = [run_id for run_id, _ in batch]

        def commit(ids: list[str] = ids) -> int:
            events = send(cur, "event_rows", {"run_ids": ids})
            send(cur, "runs", {"run_ids": ids})
            return events

        report.events += retrying(cur, config, commit)
        report.runs += len(batch)
        sent += sum(events for _, events in batch)
        if progress is not None:
            progress(f"pushed {report.runs} of {len(todo)} runs", sent / total)
    local = local_tables(cur)
    if "annotation_rows" in local:
        report.annotations = retrying(cur, config, lambda: send(cur, "annotation_rows", {}))
    if "regress_runs" in local and "regress_runs" in lake_tables(cur):
        report.suite_runs = retrying(cur, config, lambda: _push_suites(cur, every))
    cur.execute("DROP TABLE IF EXISTS push_chosen; DROP TABLE IF EXISTS push_lake_has")
    return report


# Each table sent: the statement that sends its rows as they are, and what picks them.
_SENDS = {
    "event_rows": (_EVENTS, "event_rows", _EVENTS_WHERE),
    "runs": (_RUN_ROWS, "run_rows", _RUN_ROWS_WHERE),
    "annotation_rows": (_ANNOTATIONS, "annotation_rows", _ANNOTATIONS_WHERE),
}
Send = Callable[[duckdb.DuckDBPyConnection, str, dict[str, Any]], int]


def _sent(cur: duckdb.DuckDBPyConnection, table: str, params: dict[str, Any]) -> int:
    """Send the rows of `table` as they are; how many."""
    return _count(cur.execute(_SENDS[table][0], params))


def _redacting(redactor: Redactor) -> Send:
    def send(cur: duckdb.DuckDBPyConnection, table: str, params: dict[str, Any]) -> int:
        _, target, where = _SENDS[table]
        return insert_redacted(cur, redactor, table, target, where, params)

    return send


def _push_suites(cur: duckdb.DuckDBPyConnection, every: bool) -> int:
    cur.execute(_SUITES, {"all": every})
    for table in _SUITE_TABLES:
        cur.execute(
            f"INSERT INTO {LAKE}.{table} SELECT * FROM main.{table} "
            "WHERE suite_run_id IN (SELECT suite_run_id FROM push_suites)"
        )
    return _count(cur.execute("SELECT count(*) FROM push_suites"))


def _count(result: duckdb.DuckDBPyConnection) -> int:
    row = result.fetchone()
    return int(row[0]) if row else 0


def _batches(todo: list[tuple[str, int]], limit: int) -> Iterator[list[tuple[str, int]]]:
    batch: list[tuple[str, int]] = []
    size = 0
    for run_id, events in todo:
        if batch and size + events > limit:
            yield batch
            batch, size = [], 0
        batch.append((run_id, events))
        size += events
    if batch:
        yield batch


def retrying(cur: duckdb.DuckDBPyConnection, config: LakeConfig, work: Callable[[], T]) -> T:
    """`work` in one lake transaction, retried with backoff when another writer's commit
    conflicts with it; a `LakeError` saying so when it still conflicts after RETRIES."""
    pause = RETRY_FIRST_S
    for attempt in range(1, RETRIES + 1):
        try:
            with _transaction(cur):
                return work()
        except duckdb.Error as exc:
            if not is_conflict(exc):
                raise LakeError(
                    f"cannot write to the lake {config.label}: {scrubbed(exc, config, {})}"
                ) from None
            if attempt == RETRIES:
                raise LakeError(
                    f"gave up writing to the lake {config.label} after {RETRIES} transaction "
                    f"conflicts with other writers ({scrubbed(exc, config, {})}); nothing of "
                    "this batch was written: run it again"
                ) from None
        time.sleep(pause)
        pause *= 2
    raise AssertionError("unreachable")


def is_conflict(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.TransactionException) or "conflict" in str(exc).lower()


@contextmanager
def _transaction(cur: duckdb.DuckDBPyConnection) -> Iterator[None]:
    cur.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        # (a failed statement may have ended the transaction already)
        with suppress(duckdb.Error):
            cur.execute("ROLLBACK")
        raise
    cur.execute("COMMIT")
