"""Streaming reader for `<run_id>.jsonl` traces.

A trace is written line by line while the run goes on, so the last line of a live or killed
run may be cut short: that line is skipped silently. Every other bad line is reported as
`file:line: reason` and the rest of the file is still read. A trace written by a newer
workbench (`schema_version` above ours) is refused; older versions are migrated line by line
before validation (`traces.versions`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from traces.events import EVENT_ADAPTER, SCHEMA_VERSION, Event
from traces.versions import check_version, declared_version, migrate


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
            declared = declared_version(record)
            if declared is not None:
                version = progress.schema_version = check_version(path, declared)
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
