"""Streaming reader for `<run_id>.jsonl` traces.

A trace is written line by line while the run goes on, so the last line of a live or killed
run may be cut short: that line is skipped silently. Every other bad line is reported as
`file:line: reason` and the rest of the file is still read. A trace written by a newer
workbench (`schema_version` above ours) is refused; older versions are migrated line by line
before validation (`traces.versions`). The line-by-line reading is `traces.line_check`'s,
shared with the store's ingest; the reader adds building the events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from traces.events import EVENT_ADAPTER, SCHEMA_VERSION, Event, RunStart
from traces.line_check import (
    bounded_lines,
    check_lines,
    describe_validation_error,
    long_line_problem,
)
from traces.user_files import open_regular
from traces.versions import NewerSchemaError

__all__ = [
    "NewerSchemaError",
    "describe_validation_error",
    "iter_trace",
    "read_trace",
    "validate_line",
]


@dataclass
class ReadResult:
    events: list[Event] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION
    truncated_tail: bool = False


def validate_line(text: str | bytes) -> Event:
    """One line as the event models read it: strictly, so a line is valid only with the
    types the writer writes (`"ok": "maybe"` or `"seq": "5"` are refused, not coerced).
    Ingest admits exactly the lines this accepts, so whatever the store holds reads back
    (it checks them with `traces.line_check.check_line`, the same check without the models)."""
    return EVENT_ADAPTER.validate_json(text, strict=True)


# Hears how many bytes of the file were read so far, after each line.
Progress = Callable[[int], object]


def _iter(
    path: Path, result: ReadResult, progress: Progress | None = None
) -> Iterator[tuple[int, Event]]:
    def too_long(number: int, length: int) -> None:
        result.problems.append(long_line_problem(path, number, length))

    with open_regular(path) as handle:  # a FIFO or device named .jsonl is refused
        raw = bounded_lines(handle, too_long)
        lines = check_lines(_track_tail(raw, result, progress), validate_line)
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


def _track_tail(
    handle: Iterable[bytes], result: ReadResult, progress: Progress | None = None
) -> Iterator[bytes]:
    read = 0
    for raw in handle:
        if not raw.endswith(b"\n"):
            result.truncated_tail = True
        yield raw
        if progress is not None:
            read += len(raw)
            progress(read)


def iter_trace(path: Path | str, problems: list[str] | None = None) -> Iterator[Event]:
    """Yield the valid events of one trace in file order; bad lines go to `problems`."""
    result = ReadResult(problems=problems if problems is not None else [])
    for _, event in _iter(Path(path), result):
        yield event


def read_trace(path: Path | str, progress: Progress | None = None) -> ReadResult:
    """Read a whole trace; `progress` hears how far (in bytes) after each line. Raises
    `NewerSchemaError` for a trace from a newer workbench."""
    result = ReadResult()
    seen: set[tuple[str, int]] = set()
    for number, event in _iter(Path(path), result, progress):
        key = (event.run_id, event.seq)
        if key in seen:
            result.problems.append(f"{path}:{number}: duplicate seq {event.seq}")
            continue
        seen.add(key)
        result.events.append(event)
    return result
