"""Streaming reader for `<run_id>.jsonl` traces.

A trace is written line by line while the run goes on, so the last line of a live or killed
run may be cut short: that line is skipped silently. Every other bad line is reported as
`file:line: reason` and the rest of the file is still read. A trace written by a newer
workbench (`schema_version` above ours) is refused; older versions are migrated line by line
through `MIGRATIONS` before validation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from traces.events import EVENT_ADAPTER, SCHEMA_VERSION, Event


class NewerSchemaError(ValueError):
    """The trace was written with a schema version this workbench does not know yet."""

    def __init__(self, path: Path | str, version: int) -> None:
        self.reason = (
            f"schema_version {version} is newer than this workbench supports "
            f"({SCHEMA_VERSION}); upgrade agent-workbench to read it"
        )
        super().__init__(f"{path}: {self.reason}")
        self.path = str(path)
        self.version = version


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


MIGRATIONS: dict[int, Migration] = {1: _v1_to_v2}


def migrate(record: dict[str, Any], version: int) -> dict[str, Any]:
    """Bring one decoded line from `version` up to the current schema."""
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise ValueError(f"no migration from schema_version {version}")
        record = step(record)
        version += 1
    return record


@dataclass
class ReadResult:
    events: list[Event] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION
    truncated_tail: bool = False


@dataclass
class _Progress:
    problems: list[str] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION
    truncated_tail: bool = False


def describe_validation_error(exc: ValidationError) -> str:
    """The first error pydantic found, as a short phrase (`missing field 'task'`)."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    if first["type"] == "missing":
        return f"missing field '{where}'"
    if first["type"] == "union_tag_invalid":
        tag = (first.get("ctx") or {}).get("tag")
        return f"unknown event type '{tag}'"
    if first["type"] == "union_tag_not_found":
        return "missing field 'type'"
    if first["type"] == "extra_forbidden":
        return f"unknown field '{where}'"
    return f"{where}: {first['msg']}" if where else str(first["msg"])


def _iter(path: Path, progress: _Progress) -> Iterator[tuple[int, Event]]:
    version = SCHEMA_VERSION
    with path.open("rb") as handle:
        number = 0
        for raw in handle:
            number += 1
            if not raw.endswith(b"\n"):
                # The writer appends whole lines; a missing newline means it stopped mid-line.
                progress.truncated_tail = True
                return
            text = raw.strip()
            if not text:
                continue
            try:
                record = json.loads(text)
            except (json.JSONDecodeError, UnicodeDecodeError):
                progress.problems.append(f"{path}:{number}: not valid JSON")
                continue
            if not isinstance(record, dict):
                progress.problems.append(f"{path}:{number}: not a JSON object")
                continue
            if record.get("type") == "run_start":
                declared = record.get("schema_version", SCHEMA_VERSION)
                if isinstance(declared, int) and declared > SCHEMA_VERSION:
                    raise NewerSchemaError(path, declared)
                if isinstance(declared, int):
                    version = progress.schema_version = declared
            if version < SCHEMA_VERSION:
                record = migrate(record, version)
            try:
                yield number, EVENT_ADAPTER.validate_python(record)
            except ValidationError as exc:
                progress.problems.append(f"{path}:{number}: {describe_validation_error(exc)}")


def iter_trace(path: Path | str, problems: list[str] | None = None) -> Iterator[Event]:
    """Yield the valid events of one trace in file order; bad lines go to `problems`."""
    progress = _Progress(problems=problems if problems is not None else [])
    for _, event in _iter(Path(path), progress):
        yield event


def read_trace(path: Path | str) -> ReadResult:
    """Read a whole trace. Raises `NewerSchemaError` for a trace from a newer workbench."""
    progress = _Progress()
    seen: set[tuple[str, int]] = set()
    unique: list[Event] = []
    for number, event in _iter(Path(path), progress):
        key = (event.run_id, event.seq)
        if key in seen:
            progress.problems.append(f"{path}:{number}: duplicate seq {event.seq}")
            continue
        seen.add(key)
        unique.append(event)
    return ReadResult(
        events=unique,
        problems=progress.problems,
        schema_version=progress.schema_version,
        truncated_tail=progress.truncated_tail,
    )
