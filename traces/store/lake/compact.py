"""`workbench lake compact`: the one writer that deletes or rewrites anything in the lake.

Everyone else only appends (`push`), because DuckLake 1.5.5 lets two concurrent DELETEs on
a data file that already had deletions both commit, after which the table returns rows of
that file twice (tests/lake/test_ducklake_behaviour.py keeps that seen). So compaction runs
alone: under a PostgreSQL advisory lock for a PostgreSQL catalog (a file lock beside a
catalog file), and each of its steps is one transaction, retried with backoff when a
pusher's commit conflicts with it.

Steps: runs older than `--older-than` go (retention); the run rows a later push of a
grown run superseded go; an event pushed twice (two pushes of one run at once) is kept
once; then DuckLake's own maintenance merges small files and drops expired snapshots.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from traces.store.db import duckdb
from traces.store.lake.config import LakeConfig, LakeError
from traces.store.lake.connect import INSTALL_HINT, connect, scrubbed
from traces.store.lake.push import retrying
from traces.store.lake.schema import LAKE, lake_tables

# pg_try_advisory_lock's key: "wbcompct" as a number, the same for every workbench.
LOCK_KEY = int.from_bytes(b"wbcompct", "big") & 0x7FFF_FFFF_FFFF_FFFF
# Snapshots older than this are expired (time travel further back is given up).
KEEP_SNAPSHOTS = "1 day"


@dataclass
class CompactReport:
    runs_removed: int = 0
    superseded_rows: int = 0
    duplicate_events: int = 0


_OLD_RUNS = f"""
CREATE OR REPLACE TEMP TABLE compact_old AS
SELECT run_id FROM {LAKE}.run_rows GROUP BY run_id HAVING max(started_at) < $cutoff
"""
_RUN_TABLES = ("event_rows", "annotation_rows", "regress_samples", "run_rows")
_SUPERSEDED = f"""
DELETE FROM {LAKE}.run_rows r WHERE EXISTS (
    SELECT 1 FROM {LAKE}.run_rows n WHERE n.run_id = r.run_id
      AND (n.events > r.events OR (n.events = r.events AND n.pushed_at > r.pushed_at)))
"""
_DUPLICATES = f"""
CREATE OR REPLACE TEMP TABLE compact_once AS
SELECT * FROM {LAKE}.event_rows WHERE (run_id, seq) IN (
    SELECT (run_id, seq) FROM {LAKE}.event_rows GROUP BY run_id, seq HAVING count(*) > 1)
QUALIFY row_number() OVER (PARTITION BY run_id, seq) = 1
"""


def compact(config: LakeConfig, older_than: datetime | None = None) -> CompactReport:
    """Compact the lake (see the module); `older_than`: remove runs started before it."""
    report = CompactReport()
    with compaction_lock(config), connect(config, read_only=False) as conn:
        cur = conn.cursor()
        try:
            have = lake_tables(cur)
            if "run_rows" not in have:
                return report  # nothing pushed yet
            if older_than is not None:
                report.runs_removed = retrying(
                    cur, config, lambda: _remove_old(cur, have, older_than)
                )
            report.superseded_rows = retrying(cur, config, lambda: _rows(cur.execute(_SUPERSEDED)))
            report.duplicate_events = retrying(cur, config, lambda: _once(cur))
            for call in (
                f"CALL ducklake_merge_adjacent_files('{LAKE}')",
                f"CALL ducklake_expire_snapshots('{LAKE}', older_than => "
                f"now() - INTERVAL '{KEEP_SNAPSHOTS}')",
                f"CALL ducklake_cleanup_old_files('{LAKE}', cleanup_all => true)",
            ):
                retrying(cur, config, partial(_maintain, cur, call))
        except duckdb.Error as exc:
            raise LakeError(f"cannot compact {config.label}: {scrubbed(exc, config, {})}") from None
        finally:
            cur.close()
    return report


def _remove_old(cur: duckdb.DuckDBPyConnection, have: set[str], cutoff: datetime) -> int:
    cur.execute(_OLD_RUNS, {"cutoff": cutoff})
    removed = _rows(cur.execute("SELECT count(*) FROM compact_old"))
    for table in _RUN_TABLES:
        if table in have:
            cur.execute(
                f"DELETE FROM {LAKE}.{table} WHERE run_id IN (SELECT run_id FROM compact_old)"
            )
    return removed


def _once(cur: duckdb.DuckDBPyConnection) -> int:
    cur.execute(_DUPLICATES)
    kept = _rows(cur.execute("SELECT count(*) FROM compact_once"))
    if kept:
        doubled = _rows(
            cur.execute(
                f"DELETE FROM {LAKE}.event_rows WHERE (run_id, seq) IN "
                "(SELECT (run_id, seq) FROM compact_once)"
            )
        )
        cur.execute(f"INSERT INTO {LAKE}.event_rows SELECT * FROM compact_once")
        kept = doubled - kept
    return kept


def _maintain(cur: duckdb.DuckDBPyConnection, call: str) -> None:
    cur.execute(call).fetchall()


def _rows(result: duckdb.DuckDBPyConnection) -> int:
    row = result.fetchone()
    return int(row[0]) if row else 0


@contextmanager
def compaction_lock(config: LakeConfig) -> Iterator[None]:
    """Hold the lake's compaction lock, or a `LakeError` when another compaction holds it."""
    if not config.on_postgres:
        with _file_lock(Path(f"{config.catalog}.compact.lock")):
            yield
        return
    try:
        import psycopg
    except ImportError:
        raise LakeError(f"compaction needs psycopg; install it with `{INSTALL_HINT}`") from None
    try:
        conn: Any = psycopg.connect(config.catalog, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise LakeError(
            f"cannot reach the lake's catalog for its lock: {scrubbed(exc, config, {})}"
        ) from None
    with conn:
        held = conn.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()
        if not held or not held[0]:
            raise LakeError(
                f"another `workbench lake compact` is running on {config.label}; try later"
            )
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LakeError(f"another `workbench lake compact` holds {path}; try later") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
