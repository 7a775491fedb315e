"""Schema versions of the trace contract: which version a line declares, and the migrations
that bring an older line up to the current one.

The reader and the store's ingest both decide a trace's version here, so they cannot drift.
`SCHEMA_VERSION` and the one-line summary of each version live here too, not with the event
models, so the store can check a file's version without loading pydantic (`traces.events`
re-exports them); importing this module checks that every older version has both a summary
and a migration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 3
SCHEMA_VERSIONS: dict[int, str] = {
    1: "first release: run_start … run_end, model chunks, tool calls, MCP frames, trims",
    2: "run origin and client, tools dropped or renamed, observed tool calls, tools_changed",
    3: "each model call's wire format (chat, responses, anthropic) and its non-chat body",
}


class NewerSchemaError(ValueError):
    """The trace was written with a schema version this workbench does not know yet."""

    def __init__(self, path: Path | str, version: int, line: int | None = None) -> None:
        self.line = line  # of the run_start that declares it, when known
        self.reason = (
            f"schema_version {version} is newer than this workbench supports "
            f"({SCHEMA_VERSION}); upgrade agent-workbench to read it"
        )
        super().__init__(f"{path}: {self.reason}")
        self.path = str(path)
        self.version = version


def declared_version(record: Mapping[str, Any]) -> int | None:
    """The schema version a decoded trace line declares, or None if it declares none.

    Only a `run_start` declares one (the lines after it are of that version); a `run_start`
    without the field is of the current version.
    """
    if record.get("type") != "run_start":
        return None
    version = record.get("schema_version", SCHEMA_VERSION)
    return version if isinstance(version, int) else None


def check_version(path: Path | str, version: int) -> int:
    """`version`, if this workbench can read it; raises `NewerSchemaError` if it is newer."""
    if version > SCHEMA_VERSION:
        raise NewerSchemaError(path, version)
    return version


# One function per old version: it turns a decoded line of version N into version N + 1.
Migration = Callable[[dict[str, Any]], dict[str, Any]]


def _v1_to_v2(record: dict[str, Any]) -> dict[str, Any]:
    """v2 adds optional fields only; a v1 run_start learns its origin from what v1 kept:
    regression meta (a sample), an MCP config (an `mcp` session) or a parent run (a fork)."""
    if record.get("type") != "run_start":
        return record
    meta = record.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    if "regress" in meta:  # samples of a recorded context have a parent too
        origin = "regression_sample"
    elif "mcp_config" in meta:
        origin = "mcp_session"
    elif record.get("parent_run_id") is not None:
        origin = "fork"
    else:
        origin = "agent"
    return {**record, "schema_version": 2, "origin": origin}


def _v2_to_v3(record: dict[str, Any]) -> dict[str, Any]:
    """Before v3 every model call was a chat completion."""
    if record.get("type") == "run_start":
        return {**record, "schema_version": 3}
    if record.get("type") == "model_request":
        return {"api": "chat", "body": None, **record}
    return record


MIGRATIONS: dict[int, Migration] = {1: _v1_to_v2, 2: _v2_to_v3}


def migrate(
    record: dict[str, Any],
    version: int,
    current: int = SCHEMA_VERSION,
    migrations: Mapping[int, Migration] = MIGRATIONS,
) -> dict[str, Any]:
    """Bring one decoded line from `version` up to the current schema (of the traces, or
    of another file contract given its `current` version and `migrations`)."""
    while version < current:
        step = migrations.get(version)
        if step is None:
            raise ValueError(f"no migration from schema_version {version}")
        record = step(record)
        version += 1
    return record


def check_versions(
    current: int = SCHEMA_VERSION,
    summaries: Mapping[int, str] = SCHEMA_VERSIONS,
    migrations: Mapping[int, Migration] = MIGRATIONS,
    names: tuple[str, str] = ("SCHEMA_VERSIONS", "MIGRATIONS"),
) -> None:
    """Raises unless every version has a summary and every older one a migration (of the
    traces, or of another file contract: `traces.annotations` checks its own)."""
    # A schema bump must come with its summary and the migration from the version before.
    older = set(range(1, current))
    if set(summaries) != older | {current}:
        raise RuntimeError(f"{names[0]} must describe versions 1..{current}")
    if set(migrations) != older:
        raise RuntimeError(f"{names[1]} must migrate each of versions 1..{current - 1}")


check_versions()
