"""Reading a lake: a connection the store's own queries run on (`TraceStore.over_lake`),
and `workbench lake status`."""

from __future__ import annotations

from typing import Any

from traces.store.db import duckdb
from traces.store.lake.config import LakeConfig, LakeError, without_password
from traces.store.lake.connect import connect, scrubbed
from traces.store.lake.schema import LAKE, create_read_views, lake_tables, versions


def lake_connection(config: LakeConfig) -> duckdb.DuckDBPyConnection:
    """The lake attached read-only, with the store's names over its tables: what
    `TraceStore.over_lake` reads through."""
    conn = connect(config, read_only=True)
    try:
        with conn.cursor() as cur:
            create_read_views(cur)
    except duckdb.Error as exc:
        conn.close()
        raise LakeError(
            f"cannot read the lake {config.label}: {scrubbed(exc, config, {})}"
        ) from None
    return conn


_STATUS = f"""
SELECT
    (SELECT count(*) FROM runs) AS runs,
    (SELECT count(*) FROM event_rows) AS events,
    (SELECT count(*) FROM annotations) AS annotations,
    (SELECT count(DISTINCT suite_run_id) FROM regress_samples) AS suite_runs,
    (SELECT max(started_at) FROM runs) AS newest_run,
    (SELECT count(*) FROM {LAKE}.snapshots()) AS snapshots,
    (SELECT max(snapshot_time) FROM {LAKE}.snapshots()) AS last_commit
"""


def lake_status(config: LakeConfig) -> dict[str, Any]:
    """What `workbench lake status` shows: the lake (no credentials), its schema version,
    what it holds, its snapshots and its data files."""
    with lake_connection(config) as conn:
        result = conn.execute(_STATUS)
        columns = [column[0] for column in result.description or []]
        found = dict(zip(columns, result.fetchall()[0], strict=True))
        files, size = 0, 0
        tables = lake_tables(conn)
        for table in sorted(tables):
            listed = conn.execute(
                "SELECT count(*), coalesce(sum(data_file_size_bytes), 0) "
                "FROM ducklake_list_files($lake, $table)",
                {"lake": LAKE, "table": table},
            ).fetchall()
            files, size = files + int(listed[0][0]), size + int(listed[0][1])
        meta = dict(versions(conn))
    version = f"{meta['lake_version']}.{meta['store_version']}" if meta else "(empty lake)"
    return {
        "catalog": without_password(config.catalog),
        "data": config.data,
        "schema_version": version,
        **found,
        "data_files": files,
        "data_bytes": size,
    }
