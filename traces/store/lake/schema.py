"""The lake's tables, and the views that let the store's own queries read them.

The lake holds base tables only, each shaped as the local store's table of the same name
(made from it: one definition of every column): `event_rows` (the good events), `run_rows`
(a row per push of a run that grew: `runs` plus `pushed_at`), `annotation_rows`, and the
suite results `regress_runs`, `regress_cases` and `regress_samples`. A reader puts views of
the store's names over them in its own in-memory database, then the store's views
(`events`, `model_calls`, `tool_calls`, `tool_schemas`, the annotation views) on top, so
`runs`, `show`, `search` and `sql` run the very SQL they run on a local store. The views are
the reader's, never the lake's: workbenches of different versions can share one lake.
"""

from __future__ import annotations

from traces.store import sql
from traces.store.db import duckdb
from traces.store.notes_sql import ANNOTATION_SCHEMA

# Bump when the lake's tables change shape; the store's STORE_VERSION is kept beside it,
# since the lake's columns are the store's.
LAKE_VERSION = 1
LAKE = "lake"  # the name the lake is attached under

META = f"CREATE TABLE IF NOT EXISTS {LAKE}.lake_meta (key VARCHAR, value VARCHAR)"
META_GET = f"SELECT key, value FROM {LAKE}.lake_meta"
META_SET = f"INSERT INTO {LAKE}.lake_meta VALUES ('lake_version', $lake), ('store_version', $store)"

# Each pushed table: what it is made from in the local store (the columns, no rows).
PUSHED = {
    "event_rows": "SELECT * FROM main.event_rows",
    "run_rows": "SELECT *, now() AS pushed_at FROM main.runs",
    "annotation_rows": "SELECT * FROM main.annotation_rows",
    "regress_samples": "SELECT * FROM main.regress_samples",
    "regress_runs": "SELECT * FROM main.regress_runs",
    "regress_cases": "SELECT * FROM main.regress_cases",
}

# The store's names over the lake's tables, in the reader's memory database: each view and
# the lake table it reads.
READ_VIEWS = {
    # `rowid` too: the store reads a page of a run by it (`sql.EVENTS_PAGE`).
    "event_rows": ("event_rows", f"SELECT *, rowid AS rowid FROM {LAKE}.event_rows"),
    # A run pushed again after it grew has a newer row: the one with the most events counts.
    "runs": (
        "run_rows",
        f"""SELECT * EXCLUDE (pushed_at) FROM {LAKE}.run_rows
QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY events DESC, pushed_at DESC) = 1""",
    ),
    "annotation_rows": ("annotation_rows", f"SELECT * FROM {LAKE}.annotation_rows"),
    "regress_samples": ("regress_samples", f"SELECT * FROM {LAKE}.regress_samples"),
    "regress_runs": ("regress_runs", f"SELECT * FROM {LAKE}.regress_runs"),
    "regress_cases": ("regress_cases", f"SELECT * FROM {LAKE}.regress_cases"),
}
# Suite results only `sql` reads on a lake (the store's own readers of them look for tables).
SUITE_ONLY = ("regress_runs", "regress_cases")
# Every pushed row has batch 0 (`push`): a run's rows are found by run id alone, which
# DuckLake's per-file statistics prune.
RUN_BATCHES = "CREATE VIEW run_batches AS SELECT run_id, [0] AS batches FROM runs"
# An empty store, whose tables stand in for those a lake has not been given yet.
SHAPE = "shape"


def store_views() -> list[str]:
    """The store's own views (`sql.SCHEMA`, the annotation schema), statement by statement."""
    found = []
    for schema in (sql.SCHEMA, ANNOTATION_SCHEMA):
        for statement in schema.split(";"):
            code = "\n".join(
                line for line in statement.splitlines() if not line.lstrip().startswith("--")
            ).strip()
            if code.startswith("CREATE OR REPLACE VIEW"):
                found.append(code)
    return found


def lake_tables(cur: duckdb.DuckDBPyConnection) -> set[str]:
    rows = cur.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = $lake", {"lake": LAKE}
    ).fetchall()
    return {str(name) for (name,) in rows}


def local_tables(cur: duckdb.DuckDBPyConnection) -> set[str]:
    rows = cur.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
    ).fetchall()
    return {str(name) for (name,) in rows}


def versions(cur: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """The lake's lake_version and store_version; empty for a lake not written yet."""
    if "lake_meta" not in lake_tables(cur):
        return {}
    return {str(k): str(v) for k, v in cur.execute(META_GET).fetchall()}


def ensure_tables(cur: duckdb.DuckDBPyConnection) -> None:
    """Make what the lake lacks of its tables, from the local store's (in the caller's
    transaction)."""
    have = lake_tables(cur)
    local = local_tables(cur)
    if "lake_meta" not in have:
        cur.execute(META)
        cur.execute(META_SET, {"lake": str(LAKE_VERSION), "store": str(sql.STORE_VERSION)})
    for table, source in PUSHED.items():
        origin = source.rsplit(".", 1)[1]
        if table not in have and origin in local:
            cur.execute(f"CREATE TABLE {LAKE}.{table} AS {source} LIMIT 0")


def create_read_views(cur: duckdb.DuckDBPyConnection) -> None:
    """The reader's views (see the module); a table the lake lacks yet reads as empty."""
    have = lake_tables(cur)
    if any(table not in have for table, _ in READ_VIEWS.values()):
        cur.execute(f"ATTACH ':memory:' AS {SHAPE}")
        cur.execute(f"USE {SHAPE}")
        cur.execute(sql.SCHEMA)
        cur.execute("USE memory")
    for name, (table, select) in READ_VIEWS.items():
        if table not in have:
            if name in SUITE_ONLY:
                continue  # `sql` finds them once a suite's results were pushed
            # (`rowid` as the lake's event_rows has it: see READ_VIEWS)
            rowid = ", rowid AS rowid" if name == "event_rows" else ""
            select = f"SELECT *{rowid} FROM {SHAPE}.{name}"
        cur.execute(f"CREATE VIEW {name} AS {select}")
    cur.execute(RUN_BATCHES)
    for statement in store_views():
        cur.execute(statement)
