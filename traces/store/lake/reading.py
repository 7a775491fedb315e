"""A `TraceStore` over a lake: the store's own queries on the lake's tables (`schema`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from traces.store.db import duckdb
from traces.store.lake import config as lake_config
from traces.store.lake.config import LakeConfig, LakeError, without_password
from traces.store.lake.connect import connect, scrubbed
from traces.store.lake.schema import LAKE, create_read_views
from traces.store.store import TraceStore


def lake_store(config: LakeConfig) -> TraceStore:
    """The lake, read-only, as a `TraceStore` whose `path` is the lake's label."""
    conn = connect(config, read_only=True)
    try:
        with conn.cursor() as cur:
            create_read_views(cur)
    except duckdb.Error as exc:
        conn.close()
        raise LakeError(
            f"cannot read the lake {config.label}: {scrubbed(exc, config, {})}"
        ) from None
    store = TraceStore(conn, Path(config.label), read_only=True)
    store.lake = config.label
    return store


def home_lake_store(home: Path, url: str | None) -> TraceStore:
    """The lake `--lake URL` names, else the one in the home's lake.toml."""
    return lake_store(lake_config.for_home(home, url))


_STATUS = f"""
SELECT
    (SELECT count(*) FROM runs) AS runs,
    (SELECT count(*) FROM event_rows) AS events,
    (SELECT count(*) FROM annotations) AS annotations,
    (SELECT count(*) FROM regress_runs) AS suite_runs,
    (SELECT max(started_at) FROM runs) AS newest_run,
    (SELECT count(*) FROM {LAKE}.snapshots()) AS snapshots,
    (SELECT max(snapshot_time) FROM {LAKE}.snapshots()) AS last_commit
"""


def lake_status(config: LakeConfig) -> dict[str, Any]:
    """What `workbench lake status` shows: the lake (no credentials), its schema version,
    what it holds, its snapshots and its data files."""
    with lake_store(config) as store:
        columns, rows = store.query(_STATUS)
        found = dict(zip(columns, rows[0], strict=True))
        _, tables = store.query(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = $lake", {"lake": LAKE}
        )
        files, size = 0, 0
        for (table,) in tables:
            _, listed = store.query(
                "SELECT count(*), coalesce(sum(data_file_size_bytes), 0) "
                "FROM ducklake_list_files($lake, $table)",
                {"lake": LAKE, "table": table},
            )
            files, size = files + int(listed[0][0]), size + int(listed[0][1])
        meta: dict[str, Any] = {}
        if ("lake_meta",) in tables:
            meta = dict(store.query(f"SELECT key, value FROM {LAKE}.lake_meta")[1])
    version = f"{meta['lake_version']}.{meta['store_version']}" if meta else "(empty lake)"
    return {
        "catalog": without_password(config.catalog),
        "data": config.data,
        "schema_version": version,
        **found,
        "data_files": files,
        "data_bytes": size,
    }
