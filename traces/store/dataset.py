"""The store as a Hive-partitioned Parquet dataset, and such a dataset read back beside it.

Layout under DEST (a folder, or an object store URL DuckDB can write and read):

    DEST/runs/day=YYYY-MM-DD/runs_<uuid>.parquet     one row per run export
    DEST/events/day=YYYY-MM-DD/events_<uuid>.parquet one row per event, the line as text

`day` is the UTC day the run started, for a run's row and all its events, so one day's
folder holds whole runs. Files are only ever added: an export writes the events the dataset
lacks (by run id and seq) and a new row for each run that is new or has grown since, so a
run exported while it was still running has several rows; the latest (most `events`) is the
run as it stands. `sql --dataset` shows that row only, as `dataset.runs`. The event line is
a plain string column (not Parquet's JSON type), which every reader takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from traces.store.db import duckdb

TABLES = ("runs", "events")


@dataclass
class DatasetExport:
    dest: str
    new_events: int = 0
    new_run_rows: int = 0
    days: int = 0


def is_url(dest: str) -> bool:
    return "://" in dest


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def files_glob(dest: str, table: str) -> str:
    return f"{dest.rstrip('/')}/{table}/**/*.parquet"


def _has_files(cur: duckdb.DuckDBPyConnection, dest: str, table: str) -> bool:
    if not is_url(dest):
        folder = Path(dest) / table
        return folder.is_dir() and any(folder.rglob("*.parquet"))
    row = cur.execute("SELECT count(*) FROM glob(?)", [files_glob(dest, table)]).fetchone()
    return bool(row and row[0])


def _source(dest: str, table: str) -> str:
    return f"read_parquet({_literal(files_glob(dest, table))}, hive_partitioning = true)"


# The runs the dataset lacks or holds with fewer events than the store: what to write.
_CHANGED_RUNS = """
CREATE OR REPLACE TEMP TABLE export_runs AS
SELECT r.*, CAST(r.started_at AS DATE) AS day, now() AS exported_at
FROM runs r
WHERE NOT EXISTS (SELECT 1 FROM {done} d WHERE d.run_id = r.run_id AND d.events >= r.events)
"""
# Their events the dataset does not hold yet (a failed export may have written some).
_NEW_EVENTS = """
SELECT e.run_id, e.seq, e.type, e.turn, e.ts, e.event::VARCHAR AS event, x.day
FROM events e JOIN export_runs x USING (run_id)
WHERE NOT EXISTS (SELECT 1 FROM {done} d WHERE d.run_id = e.run_id AND d.seq = e.seq)
"""
_COPY = """
COPY ({query}) TO {target}
    (FORMAT parquet, PARTITION_BY (day), APPEND, FILENAME_PATTERN '{name}_{{uuid}}',
     COMPRESSION zstd)
"""
_EMPTY = "(SELECT NULL::VARCHAR AS run_id, NULL::BIGINT AS seq, 0 AS events LIMIT 0)"


def export_dataset(cur: duckdb.DuckDBPyConnection, dest: str) -> DatasetExport:
    """Write what the dataset at `dest` lacks; events first, so a run's row is written only
    once its events are there."""
    if not is_url(dest):
        Path(dest).mkdir(parents=True, exist_ok=True)
    runs_done = _source(dest, "runs") if _has_files(cur, dest, "runs") else _EMPTY
    events_done = _source(dest, "events") if _has_files(cur, dest, "events") else _EMPTY
    root = dest.rstrip("/")
    report = DatasetExport(dest=dest)
    cur.execute(_CHANGED_RUNS.format(done=runs_done))
    try:
        row = cur.execute("SELECT count(*), count(DISTINCT day) FROM export_runs").fetchone()
        report.new_run_rows, report.days = (int(n) for n in row or (0, 0))
        if not report.new_run_rows:
            return report
        # COPY answers with the number of rows it wrote.
        events = cur.execute(
            _COPY.format(
                query=_NEW_EVENTS.format(done=events_done),
                target=_literal(f"{root}/events"),
                name="events",
            )
        ).fetchone()
        report.new_events = int(events[0]) if events else 0
        cur.execute(
            _COPY.format(
                query="SELECT * FROM export_runs", target=_literal(f"{root}/runs"), name="runs"
            )
        )
    finally:
        cur.execute("DROP TABLE export_runs")
    return report


def attach_dataset(cur: duckdb.DuckDBPyConnection, dest: str) -> None:
    """Make the dataset queryable as `dataset.runs` (the latest row of each run),
    `dataset.run_rows` (every row written) and `dataset.events`."""
    for table in TABLES:
        if not _has_files(cur, dest, table):
            raise FileNotFoundError(
                f"{dest} holds no {table} dataset ({files_glob(dest, table)} matches no "
                "file); `workbench export-parquet DEST` writes one"
            )
    cur.execute("ATTACH ':memory:' AS dataset")
    cur.execute(f"CREATE VIEW dataset.run_rows AS SELECT * FROM {_source(dest, 'runs')}")
    cur.execute(
        "CREATE VIEW dataset.runs AS SELECT * FROM dataset.run_rows "
        "QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY events DESC, "
        "exported_at DESC) = 1"
    )
    cur.execute(
        "CREATE VIEW dataset.events AS SELECT * REPLACE (event::JSON AS event) "
        f"FROM {_source(dest, 'events')}"
    )
