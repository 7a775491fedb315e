"""Streaming reader for `<run_id>.jsonl` traces.

A trace is written line by line while the run goes on, so the last line of a live or killed
run may be cut short: that line is skipped silently. Every other bad line is reported as
`file:line: reason` and the rest of the file is still read. A trace written by a newer
workbench (`schema_version` above ours) is refused; older versions are migrated line by line
before validation (`traces.versions`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonlines
from pydantic import ValidationError

from traces.events import EVENT_ADAPTER, EVENT_TYPES, SCHEMA_VERSION, Event, RunStart
from traces.versions import MIGRATIONS, NewerSchemaError, check_version, declared_version, migrate

__all__ = ["NewerSchemaError", "check_lines", "iter_trace", "read_trace", "validate_line"]


@dataclass
class ReadResult:
    events: list[Event] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION
    truncated_tail: bool = False


_EVENT_TAGS = frozenset(cls.model_fields["type"].default for cls in EVENT_TYPES)


def describe_validation_error(exc: ValidationError) -> str:
    """The first error pydantic found, as a short phrase (`missing field 'task'`)."""
    first = exc.errors()[0]
    loc = first.get("loc", ())
    if loc and loc[0] in _EVENT_TAGS:  # the union's tag leads every field's location
        loc = loc[1:]
    where = ".".join(str(part) for part in loc)
    if first["type"] == "missing":
        return f"missing field '{where}'"
    if first["type"] == "union_tag_invalid":
        tag = (first.get("ctx") or {}).get("tag")
        return f"unknown event type '{tag}'"
    if first["type"] == "union_tag_not_found":
        return "missing field 'type'"
    if first["type"] == "extra_forbidden":
        return f"unknown field '{where}'"
    if first["type"] == "json_invalid":
        return f"not valid JSON ({str(first['msg']).removeprefix('Invalid JSON: ')})"
    return f"{where}: {first['msg']}" if where else str(first["msg"])


def loads(text: str | bytes) -> Any:
    """The JSON decoder for trace lines: a line nested too deeply for Python is a bad line
    like any other (a `ValueError`), not a `RecursionError`."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def validate_line(text: str | bytes) -> Event:
    """One line as the event models read it: strictly, so a line is valid only with the
    types the writer writes (`"ok": "maybe"` or `"seq": "5"` are refused, not coerced).
    Ingest admits exactly the lines this accepts, so whatever the store holds reads back."""
    return EVENT_ADAPTER.validate_json(text, strict=True)


@dataclass
class Line:
    """One whole line of a trace and what the reader made of it."""

    number: int
    text: str  # as stored: without a leading BOM, migrated to the current schema
    event: Event | None = None
    problem: str | None = None
    schema_version: int = SCHEMA_VERSION  # the version it was written in


class _Lines:
    """Whole lines of a trace for `jsonlines`, numbered; stops before a cut-off last line."""

    def __init__(self, raw_lines: Iterable[bytes], first_number: int) -> None:
        self._raw = iter(raw_lines)
        self.number = first_number - 1
        self.current = b""

    def __iter__(self) -> Iterator[bytes]:
        for raw in self._raw:
            if not raw.endswith(b"\n"):
                return  # the writer appends whole lines: it stopped mid-line
            self.number += 1
            self.current = raw
            yield raw


def _invalid_line_reason(exc: jsonlines.InvalidLineError) -> str:
    cause = exc.__cause__
    if isinstance(cause, UnicodeDecodeError):
        return "not valid UTF-8"
    if isinstance(cause, ValueError):
        detail = str(cause)
        return "not valid JSON" + (" (nested too deeply)" if "nested too deeply" in detail else "")
    return "not a JSON object"


def _dumps(record: dict[str, Any]) -> str:
    text = json.dumps(record, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a `\ud800` escape: keep it escaped
        text = json.dumps(record)
    return text


def _stored_text(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").rstrip("\r\n")
    return text[1:] if text.startswith(_SKIPPED_FIRST_CHARS) else text


# What `jsonlines` drops from the start of a line: a UTF-8 byte order mark, and the record
# separator of RFC 7464 JSON text sequences.
_SKIPPED_FIRST_CHARS = ("\ufeff", "\x1e")


def check_lines(
    raw_lines: Iterable[bytes], first_number: int = 1, version: int = SCHEMA_VERSION
) -> Iterator[Line]:
    """Each whole, non-blank line of `raw_lines` (bytes ending in a newline), decoded and
    validated; stops before a cut-off last line. `version` is the schema version of the
    lines when the run_start is not among them (a grown file). Raises `NewerSchemaError`
    (without a path: the caller names the file) at a run_start of a newer schema."""
    lines = _Lines(raw_lines, first_number)
    with jsonlines.Reader(lines, loads=loads) as reader:
        while True:
            try:
                record = reader.read(type=dict, skip_empty=True)
            except EOFError:
                return
            except jsonlines.InvalidLineError as exc:
                text = _stored_text(lines.current)
                yield Line(lines.number, text, problem=_invalid_line_reason(exc))
                continue
            text = _stored_text(lines.current)
            declared = declared_version(record)
            if declared is not None:
                if declared < SCHEMA_VERSION and declared not in MIGRATIONS:
                    problem = f"schema_version {declared} is not a version of this format"
                    yield Line(lines.number, text, problem=problem)
                    continue
                try:
                    version = check_version("", declared)
                except NewerSchemaError as exc:
                    exc.line = lines.number
                    raise
            if version < SCHEMA_VERSION:
                text = _dumps(migrate(record, version))
            try:
                yield Line(lines.number, text, event=validate_line(text), schema_version=version)
            except ValidationError as exc:
                problem = describe_validation_error(exc)
                yield Line(lines.number, text, problem=problem, schema_version=version)


def _iter(path: Path, result: ReadResult) -> Iterator[tuple[int, Event]]:
    with path.open("rb") as handle:
        lines = check_lines(_track_tail(handle, result))
        try:
            for line in lines:
                if line.event is None:
                    result.problems.append(f"{path}:{line.number}: {line.problem}")
                    continue
                if isinstance(line.event, RunStart):
                    result.schema_version = line.schema_version
                yield line.number, line.event
        except NewerSchemaError as exc:
            raise NewerSchemaError(path, exc.version) from None


def _track_tail(handle: Iterable[bytes], result: ReadResult) -> Iterator[bytes]:
    for raw in handle:
        if not raw.endswith(b"\n"):
            result.truncated_tail = True
        yield raw


def iter_trace(path: Path | str, problems: list[str] | None = None) -> Iterator[Event]:
    """Yield the valid events of one trace in file order; bad lines go to `problems`."""
    result = ReadResult(problems=problems if problems is not None else [])
    for _, event in _iter(Path(path), result):
        yield event


def read_trace(path: Path | str) -> ReadResult:
    """Read a whole trace. Raises `NewerSchemaError` for a trace from a newer workbench."""
    result = ReadResult()
    seen: set[tuple[str, int]] = set()
    for number, event in _iter(Path(path), result):
        key = (event.run_id, event.seq)
        if key in seen:
            result.problems.append(f"{path}:{number}: duplicate seq {event.seq}")
            continue
        seen.add(key)
        result.events.append(event)
    return result
