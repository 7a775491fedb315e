"""Reading and checking trace lines, without the event models.

`check_lines` reads a trace's lines (whole lines, numbers, BOMs, invalid UTF-8, schema
versions and migrations) and hands each to a validation: the reader's `validate_line`, which
builds the events with pydantic, or `check_line` here, which reaches the same verdict with the
same `ValidationError` from the models' validation schema kept as data (`line_schema.json`,
derived by `traces.line_schema`, held to the models by a test) in a bare
`pydantic_core.SchemaValidator`. The store's ingest uses `check_line`: it admits exactly the
lines the reader reads back, and picking up a new run loads neither pydantic nor the models.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Generic, TypeVar

import pydantic_core
from pydantic_core import SchemaValidator, ValidationError

from traces.versions import (
    MIGRATIONS,
    SCHEMA_VERSION,
    NewerSchemaError,
    check_version,
    declared_version,
    migrate,
)

if TYPE_CHECKING:
    import jsonlines

SCHEMA_FILE = Path(__file__).with_name("line_schema.json")

T = TypeVar("T")


@cache
def _schema() -> tuple[Callable[[str | bytes], object], frozenset[str]]:
    """The line validation, and the event types (the union's tags)."""
    stored = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    schema = stored["schema"]
    tags = frozenset(schema["choices"])
    if stored["pydantic_core"] != pydantic_core.__version__:
        # Derived under another pydantic: only the models themselves surely read lines as
        # the reader does here (slower to load; the schema file wants regenerating).
        from traces.events import EVENT_ADAPTER

        return partial(EVENT_ADAPTER.validate_json, strict=True), tags
    _stand_in_classes(schema)
    return partial(SchemaValidator(schema).validate_json, strict=True), tags


def _stand_in_classes(node: Any) -> None:
    # The check builds no events, but a model schema needs a class to build: a plain one
    # of the model's name, which is also what its errors name.
    if isinstance(node, dict):
        if node.get("type") == "model":
            node["cls"] = type(node["cls"], (), {})
        for value in node.values():
            _stand_in_classes(value)
    elif isinstance(node, list):
        for value in node:
            _stand_in_classes(value)


def check_line(text: str | bytes) -> object:
    """Check one line as `traces.reader.validate_line` reads it (strictly), without the
    event models; raises the same `ValidationError`. What it returns is no event: use it
    only for the verdict."""
    validate, _ = _schema()
    return validate(text)


def describe_validation_error(exc: ValidationError) -> str:
    """The first error pydantic found, as a short phrase (`missing field 'task'`)."""
    # Without urls: making them imports pydantic.
    first = exc.errors(include_url=False, include_input=False)[0]
    loc = first.get("loc", ())
    if loc and loc[0] in _schema()[1]:  # the union's tag leads every field's location
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


# The keys every event has, which say whose event a line is and where it goes. JSON readers
# differ on which of two values of a key counts (Python's and DuckDB's take the last, others
# the first), so a line that gives one twice is refused, not guessed.
_IDENTITY_KEYS = tuple(f'"{key}"'.encode() for key in ("run_id", "seq", "type", "turn", "ts"))
# A printable ASCII character written as an escape (`run\u005fid` is `run_id`): no writer
# of traces does it, so a line that does is looked at closely.
_ESCAPED_ASCII = re.compile(rb"\\u00[2-7][0-9a-fA-F]")


def repeated_key(raw: bytes) -> str | None:
    """The problem of a line whose object gives a key twice, else None; only a line that
    holds one of the identity keys' names twice (anywhere: a cheap look) is parsed again."""
    if not any(raw.count(key) > 1 for key in _IDENTITY_KEYS) and not _ESCAPED_ASCII.search(raw):
        return None
    try:
        # Every object as its list of (key, value) pairs, made by C (`list`): a Python hook
        # called for each object, nested ones included, cost most of ingest's line check
        # (a tool call's `"type"` puts most lines here). Only the line's own keys count.
        pairs = json.loads(raw, object_pairs_hook=list)
    except (ValueError, RecursionError):
        return None  # not the problem this looks for: the line's reading says what is
    if not isinstance(pairs, list) or (pairs and not isinstance(pairs[0], tuple)):
        return None  # not an object (an array's items are never pairs): refused otherwise
    keys = [key for key, _ in pairs]
    if len(set(keys)) == len(keys):
        return None
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    return f"the key '{repeated[0]}' is given twice (which value counts is ambiguous)"


@dataclass
class Line(Generic[T]):
    """One whole line of a trace and what the reader made of it."""

    number: int
    text: str  # as stored: without a leading BOM, migrated to the current schema
    event: T | None = None  # what the validation returned, for a valid line
    problem: str | None = None
    schema_version: int = SCHEMA_VERSION  # the version it was written in


# The longest line a trace may have (the store's ingest holds one of 128 MiB within its
# memory limit, and the reader as much); a longer one is reported and skipped, its line
# number kept. No agent writes one; a capture of a response that size would.
LINE_MAX = 128 << 20
# How much of a long line is read at a time while looking for its end.
STEP = 4 << 20


def long_line_problem(path: Path | str, number: int, length: int) -> str:
    return f"{path}:{number}: line of {length:,} bytes is over the limit of {LINE_MAX:,}; skipped"


def bounded_lines(handle: BinaryIO, too_long: Callable[[int, int], object]) -> Iterator[bytes]:
    """The lines of `handle`, but never one over LINE_MAX held: a long line is read in
    STEPs, and once over the limit its pieces are let go and the rest read past;
    `too_long(its number, its length)` hears of it, and a blank line stands in for it (so
    the lines after it keep their numbers). A cut-off last line comes without its newline."""
    number = 0
    while raw := handle.readline(STEP):
        number += 1
        if raw.endswith(b"\n") or len(raw) < STEP:
            yield raw
            continue
        pieces, length = [raw], len(raw)
        del raw
        while piece := handle.readline(STEP):
            length += len(piece)
            if length <= LINE_MAX:
                pieces.append(piece)
            else:
                pieces.clear()
            if piece.endswith(b"\n"):
                break
        if pieces:
            yield b"".join(pieces)  # within the limit, or a cut-off last line
        elif piece.endswith(b"\n"):  # no pieces kept: it went over the limit
            too_long(number, length - 1)
            yield b"\n"
        else:
            yield b"-"  # cut off past the limit, like any last line without its newline
            return


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
    raw_lines: Iterable[bytes],
    validate: Callable[[str], T],
    first_number: int = 1,
    version: int = SCHEMA_VERSION,
) -> Iterator[Line[T]]:
    """Each whole, non-blank line of `raw_lines` (bytes ending in a newline), decoded,
    migrated and given to `validate` (`check_line`, or the reader's `validate_line`);
    stops before a cut-off last line. `version` is the schema version of the lines when
    the run_start is not among them (a grown file). Raises `NewerSchemaError` (without a
    path: the caller names the file) at a run_start of a newer schema."""
    import jsonlines  # only here: the store's bulk path reads no line this way

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
            repeated = repeated_key(lines.current)
            if repeated is not None:
                yield Line(lines.number, text, problem=repeated)
                continue
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
                yield Line(lines.number, text, event=validate(text), schema_version=version)
            except ValidationError as exc:
                problem = describe_validation_error(exc)
                yield Line(lines.number, text, problem=problem, schema_version=version)
