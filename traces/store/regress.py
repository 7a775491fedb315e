"""Regression results and baselines, in the trace store's DuckDB file.

A suite run is stored as one row, one row per case and one per sample (with the run id of
the sample's trace). A baseline is a named copy of one suite run's pass rates together with
the tool schemas that run offered, so a later failure can be shown against the exact
descriptions that used to pass. Rows go in as one set-based statement each, from JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from traces.store import sql
from traces.store.db import duckdb
from traces.store.store import TraceStore

SCHEMA = (
    sql.REGRESS_SAMPLES
    + """
CREATE TABLE IF NOT EXISTS regress_runs (
    suite_run_id VARCHAR PRIMARY KEY,
    suite VARCHAR NOT NULL,
    suite_path VARCHAR,
    started TIMESTAMP DEFAULT current_timestamp,
    model VARCHAR,
    baseline VARCHAR,
    exit_code INTEGER,
    duration_s DOUBLE,
    tool_schemas JSON,
    tool_descriptions JSON
);
CREATE TABLE IF NOT EXISTS regress_cases (
    suite_run_id VARCHAR NOT NULL,
    case_id VARCHAR NOT NULL,
    samples INTEGER,
    passed INTEGER,
    pass_rate DOUBLE,
    min_pass_rate DOUBLE,
    baseline_rate DOUBLE,
    status VARCHAR,
    expected VARCHAR,
    chosen VARCHAR,
    PRIMARY KEY (suite_run_id, case_id)
);
CREATE TABLE IF NOT EXISTS regress_baselines (
    suite VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    created TIMESTAMP DEFAULT current_timestamp,
    suite_run_id VARCHAR NOT NULL,
    model VARCHAR,
    tool_schemas JSON,
    PRIMARY KEY (suite, name)
);
CREATE TABLE IF NOT EXISTS regress_baseline_cases (
    suite VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    case_id VARCHAR NOT NULL,
    pass_rate DOUBLE,
    PRIMARY KEY (suite, name, case_id)
);
"""
)

INSERT_RUN = """
INSERT INTO regress_runs
    (suite_run_id, suite, suite_path, model, baseline, exit_code, duration_s,
     tool_schemas, tool_descriptions)
VALUES (?, ?, ?, ?, ?, ?, ?, ?::JSON, ?::JSON)
"""

_CASE_ROW = json.dumps(
    [
        {
            "case_id": "VARCHAR",
            "samples": "INTEGER",
            "passed": "INTEGER",
            "pass_rate": "DOUBLE",
            "min_pass_rate": "DOUBLE",
            "baseline_rate": "DOUBLE",
            "status": "VARCHAR",
            "expected": "VARCHAR",
            "chosen": "VARCHAR",
        }
    ]
)
INSERT_CASES = f"""
INSERT INTO regress_cases
SELECT ?, r.case_id, r.samples, r.passed, r.pass_rate, r.min_pass_rate, r.baseline_rate,
       r.status, r.expected, r.chosen
FROM (SELECT unnest(from_json(?::JSON, '{_CASE_ROW}')) AS r)
"""

_SAMPLE_ROW = json.dumps(
    [
        {
            "case_id": "VARCHAR",
            "sample": "INTEGER",
            "run_id": "VARCHAR",
            "passed": "BOOLEAN",
            "reason": "VARCHAR",
            "chosen": "VARCHAR",
            "status": "VARCHAR",
            "error": "VARCHAR",
        }
    ]
)
INSERT_SAMPLES = f"""
INSERT INTO regress_samples
SELECT ?, r.case_id, r.sample, r.run_id, r.passed, r.reason, r.chosen, r.status, r.error
FROM (SELECT unnest(from_json(?::JSON, '{_SAMPLE_ROW}')) AS r)
"""

DELETE_BASELINE = "DELETE FROM regress_baselines WHERE suite = ? AND name = ?"
DELETE_BASELINE_CASES = "DELETE FROM regress_baseline_cases WHERE suite = ? AND name = ?"
INSERT_BASELINE = """
INSERT INTO regress_baselines (suite, name, suite_run_id, model, tool_schemas)
SELECT suite, ?, suite_run_id, model, tool_schemas FROM regress_runs WHERE suite_run_id = ?
"""
INSERT_BASELINE_CASES = """
INSERT INTO regress_baseline_cases (suite, name, case_id, pass_rate)
SELECT r.suite, ?, c.case_id, c.pass_rate
FROM regress_cases c JOIN regress_runs r USING (suite_run_id)
WHERE c.suite_run_id = ?
"""
SELECT_BASELINE = """
SELECT name, suite, strftime(created, '%Y-%m-%d %H:%M:%S'), suite_run_id, model, tool_schemas
FROM regress_baselines WHERE suite = ? AND name = ?
"""
SELECT_LATEST_BASELINE = """
SELECT name FROM regress_baselines WHERE suite = ? ORDER BY created DESC LIMIT 1
"""
SELECT_BASELINE_RATES = """
SELECT case_id, pass_rate FROM regress_baseline_cases WHERE suite = ? AND name = ?
"""
SELECT_BASELINES = """
SELECT b.suite, b.name, strftime(b.created, '%Y-%m-%d %H:%M:%S'), b.model,
       count(c.case_id), avg(c.pass_rate)
FROM regress_baselines b LEFT JOIN regress_baseline_cases c USING (suite, name)
GROUP BY b.suite, b.name, b.created, b.model ORDER BY b.suite, b.created DESC
"""
SELECT_RUNS = """
SELECT r.suite_run_id, r.suite, strftime(r.started, '%Y-%m-%d %H:%M:%S'), r.model, r.baseline,
       r.exit_code, r.duration_s, count(c.case_id),
       count(c.case_id) FILTER (WHERE c.status = 'pass')
FROM regress_runs r LEFT JOIN regress_cases c USING (suite_run_id)
WHERE ? IS NULL OR r.suite = ?
GROUP BY r.suite_run_id, r.suite, r.started, r.model, r.baseline, r.exit_code, r.duration_s
ORDER BY r.started DESC LIMIT ?
"""
SELECT_CASES = """
SELECT case_id, samples, passed, pass_rate, min_pass_rate, baseline_rate, status, expected, chosen
FROM regress_cases WHERE suite_run_id = ? ORDER BY case_id
"""


class RegressTables:
    """Regression tables on a store connection; each call uses its own cursor."""

    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        store: TraceStore | None = None,
        create: bool = True,
    ) -> None:
        self._connection = connection
        self._store = store
        if create:
            self._connection.cursor().execute(SCHEMA)

    @classmethod
    def on_store(cls, store: TraceStore) -> RegressTables | None:
        """The tables on a store already open (closing them leaves it open). A read-only
        store is read as it is: None when no suite run was ever stored in it."""
        if not store.read_only:
            return cls(store._conn)
        found = (
            store._conn.cursor()
            .execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'regress_runs'")
            .fetchone()
        )
        return cls(store._conn, create=False) if found and found[0] else None

    @classmethod
    def for_home(cls, home: Path) -> RegressTables:
        """The tables in the home folder's trace store (opened read-write; close when done).

        Raises `StoreError` (e.g. `StoreLockedError`) when the store cannot be opened."""
        store = TraceStore.for_home(home)
        # Same package as the store: its one connection is shared, as the TUI's workers do.
        return cls(store._conn, store)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def save_run(
        self,
        run: dict[str, Any],
        cases: list[dict[str, Any]],
        samples: list[dict[str, Any]],
    ) -> None:
        """Store one suite run. `run` has the regress_runs columns; `cases` and `samples`
        rows have the columns of their tables without suite_run_id."""
        cursor = self._connection.cursor()
        run_id = run["suite_run_id"]
        cursor.execute("BEGIN")
        try:
            cursor.execute(
                INSERT_RUN,
                [
                    run_id,
                    run["suite"],
                    run.get("suite_path"),
                    run.get("model"),
                    run.get("baseline"),
                    run.get("exit_code"),
                    run.get("duration_s"),
                    json.dumps(run.get("tool_schemas") or []),
                    json.dumps(run.get("tool_descriptions") or {}),
                ],
            )
            cursor.execute(INSERT_CASES, [run_id, json.dumps(cases)])
            cursor.execute(INSERT_SAMPLES, [run_id, json.dumps(samples)])
            cursor.execute("COMMIT")
        except Exception:
            cursor.execute("ROLLBACK")
            raise

    def save_baseline(self, suite: str, name: str, suite_run_id: str) -> None:
        """Make the stored suite run `suite_run_id` the baseline `name` (replacing one)."""
        cursor = self._connection.cursor()
        cursor.execute("BEGIN")
        try:
            cursor.execute(DELETE_BASELINE, [suite, name])
            cursor.execute(DELETE_BASELINE_CASES, [suite, name])
            cursor.execute(INSERT_BASELINE, [name, suite_run_id])
            cursor.execute(INSERT_BASELINE_CASES, [name, suite_run_id])
            cursor.execute("COMMIT")
        except Exception:
            cursor.execute("ROLLBACK")
            raise

    def load_baseline(self, suite: str, name: str | None = None) -> dict[str, Any] | None:
        """The baseline `name` of `suite` (the newest when name is None), or None."""
        cursor = self._connection.cursor()
        if name is None:
            latest = cursor.execute(SELECT_LATEST_BASELINE, [suite]).fetchone()
            if latest is None:
                return None
            name = str(latest[0])
        row = cursor.execute(SELECT_BASELINE, [suite, name]).fetchone()
        if row is None:
            return None
        rates = cursor.execute(SELECT_BASELINE_RATES, [suite, name]).fetchall()
        return {
            "name": row[0],
            "suite": row[1],
            "created": row[2],
            "suite_run_id": row[3],
            "model": row[4],
            "tool_schemas": json.loads(row[5]) if row[5] else [],
            "pass_rates": {case_id: rate for case_id, rate in rates},
        }

    def baselines(self) -> list[dict[str, Any]]:
        rows = self._connection.cursor().execute(SELECT_BASELINES).fetchall()
        keys = ("suite", "name", "created", "model", "cases", "mean_pass_rate")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def runs(self, suite: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        rows = self._connection.cursor().execute(SELECT_RUNS, [suite, suite, limit]).fetchall()
        keys = (
            "suite_run_id",
            "suite",
            "started",
            "model",
            "baseline",
            "exit_code",
            "duration_s",
            "cases",
            "passed_cases",
        )
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def run_tool_schemas(self, suite_run_id: str) -> list[dict[str, Any]]:
        """The tool schemas the suite run offered (what its failures are diffed against)."""
        row = (
            self._connection.cursor()
            .execute("SELECT tool_schemas FROM regress_runs WHERE suite_run_id = ?", [suite_run_id])
            .fetchone()
        )
        return list(json.loads(row[0])) if row is not None and row[0] else []

    def cases(self, suite_run_id: str) -> list[dict[str, Any]]:
        rows = self._connection.cursor().execute(SELECT_CASES, [suite_run_id]).fetchall()
        keys = (
            "case_id",
            "samples",
            "passed",
            "pass_rate",
            "min_pass_rate",
            "baseline_rate",
            "status",
            "expected",
            "chosen",
        )
        return [dict(zip(keys, row, strict=True)) for row in rows]
