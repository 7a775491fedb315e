"""The annotation contract: labels, named scores and a note that a person (or a judge)
attaches to a run, a turn or a tool call, and the tombstone that removes one.

Annotations are files, not rows: `<home>/annotations/<author>.jsonl`, one record a line,
only ever appended (removing an annotation appends a `remove` record naming it), one file
per author, so two people's annotations merge as files and travel with a run in a bundle.
The store ingests them like traces (`traces.store.notes`).

Like the trace contract (`traces.versions`) every line carries its `schema_version`;
readers refuse newer versions and migrate older ones with `ANNOTATION_MIGRATIONS`; golden
files per version live under tests/fixtures/annotations/vN/ and are never edited.
    1 — first release: notes (labels, scores, text) on a run, a turn or a tool call;
        tombstones.
    2 — a judge's note says which rubric (name, version) and which recorded judge run
        gave it (`judge`); a v1 line reads as it was.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Collection, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, TypeAdapter, field_validator

from traces.events import ts_text, utc_now
from traces.home import annotations_dir
from traces.line_check import loads
from traces.versions import Migration, check_versions, migrate

ANNOTATION_VERSION = 2
ANNOTATION_VERSIONS: dict[int, str] = {
    1: "first release: notes (labels, scores, text) on a run, turn or tool call; tombstones",
    2: "a judge's note names its rubric and version and the judge run (`judge`)",
}


def _v1_to_v2(record: dict[str, Any]) -> dict[str, Any]:
    """v2 adds an optional field only: a v1 line is a v2 line."""
    return record


ANNOTATION_MIGRATIONS: dict[int, Migration] = {1: _v1_to_v2}
check_versions(
    ANNOTATION_VERSION,
    ANNOTATION_VERSIONS,
    ANNOTATION_MIGRATIONS,
    ("ANNOTATION_VERSIONS", "ANNOTATION_MIGRATIONS"),
)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = ANNOTATION_VERSION
    id: str = Field(min_length=1)  # unique across authors: `new_id`
    # Written as the traces write a time (UTC, microseconds, `Z`).
    ts: Annotated[datetime, PlainSerializer(ts_text, return_type=str)] = Field(
        default_factory=utc_now
    )
    author: str = Field(min_length=1)
    run_id: str = Field(min_length=1)  # the run it is on (a tombstone: the removed one's)

    @field_validator("ts")
    @classmethod
    def _ts_utc(cls, ts: datetime) -> datetime:
        return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


class JudgeRef(BaseModel):
    """Where a judge's note came from: the rubric (name and version) and the recorded run
    of the judge call, which replays and forks like any run."""

    model_config = ConfigDict(extra="forbid")

    rubric: str = Field(min_length=1)
    version: int = Field(ge=1)
    run: str = Field(min_length=1)


class Note(_Record):
    """Labels, scores and a text on a run, one of its turns, or one tool call of a turn."""

    type: Literal["note"] = "note"
    turn: int | None = Field(default=None, ge=1)
    call_id: str | None = None  # a tool call of `turn`
    labels: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    scores: dict[str, float] = Field(default_factory=dict)
    text: str | None = None
    judge: JudgeRef | None = None  # set on a judge's note (`workbench judge`)

    @field_validator("call_id")
    @classmethod
    def _call_in_turn(cls, value: str | None, info: Any) -> str | None:
        if value is not None and info.data.get("turn") is None:
            raise ValueError("a call_id needs the turn it was made in")
        return value


class Removal(_Record):
    """A tombstone: the annotation `removes` no longer counts. Nothing is ever edited."""

    type: Literal["remove"] = "remove"
    removes: str = Field(min_length=1)


AnnotationRecord: TypeAlias = Annotated[Note | Removal, Field(discriminator="type")]
ANNOTATION_ADAPTER: TypeAdapter[Note | Removal] = TypeAdapter(AnnotationRecord)


class NewerAnnotationError(ValueError):
    """A line written by a newer workbench than this one."""


def read_annotation(text: str | bytes) -> Note | Removal:
    """One line of an annotations file, migrated to the current version; a `ValueError`
    (pydantic's `ValidationError` is one) says why it cannot be read."""
    try:
        record = loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    version = record.get("schema_version", ANNOTATION_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"schema_version {version!r} is not a version number")
    if version > ANNOTATION_VERSION:
        raise NewerAnnotationError(
            f"schema_version {version} is newer than this workbench supports "
            f"({ANNOTATION_VERSION}); upgrade agent-workbench to read it"
        )
    record = migrate(record, version, ANNOTATION_VERSION, ANNOTATION_MIGRATIONS)
    return ANNOTATION_ADAPTER.validate_python({**record, "schema_version": ANNOTATION_VERSION})


def new_id() -> str:
    """An annotation's id: time-ordered, and unique across authors and homes."""
    return f"{utc_now():%Y%m%d%H%M%S}-{secrets.token_hex(4)}"


def author_file(home: Path, author: str) -> Path:
    """The author's file: `<home>/annotations/<author>.jsonl`, the name made safe."""
    stem = re.sub(r"[^\w.@+-]+", "_", author).strip("._") or "anonymous"
    return annotations_dir(home) / f"{stem}.jsonl"


def append_annotation(home: Path, record: Note | Removal) -> Path:
    """Append `record` to its author's file, as one write of one whole line (so two
    writers never interleave), flushed to disk; returns the file."""
    path = author_file(home, record.author)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = record.model_dump_json(exclude_none=True).encode() + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def home_annotations(home: Path, run_ids: Collection[str] | None = None) -> list[Note | Removal]:
    """The records of the home's annotation files (on `run_ids` only, when given),
    tombstones too, each id once, oldest first: what a bundle carries of its runs. Lines
    that cannot be read are left out; the store reports them."""
    found: dict[str, Note | Removal] = {}
    for path in sorted(annotations_dir(home).glob("*.jsonl")):
        try:
            lines = path.read_bytes().split(b"\n")[:-1]  # whole lines: the last may be cut
        except OSError:
            continue
        for line in lines:
            try:
                record = read_annotation(line)
            except ValueError:
                continue
            if run_ids is None or record.run_id in run_ids:
                found.setdefault(record.id, record)
    return sorted(found.values(), key=lambda record: (record.ts, record.id))


def add_annotations(home: Path, records: Iterable[Note | Removal]) -> list[Note | Removal]:
    """Append to the home the `records` it does not hold yet (by id), each to its author's
    file as written, tombstones too: records that came with runs (a bundle, a pull) merge
    like any author's file, and adding the same records again adds nothing. Returns the
    records added."""
    known = {record.id for record in home_annotations(home)}
    added = []
    for record in records:
        if record.id not in known:
            append_annotation(home, record)
            known.add(record.id)
            added.append(record)
    return added


def annotation_target(turn: int | None, call_id: str | None) -> str:
    """Where a note is, in words: `run`, `turn 3`, `turn 3 call c1`."""
    if turn is None:
        return "run"
    return f"turn {turn}" + (f" call {call_id}" if call_id else "")


__all__ = [
    "ANNOTATION_ADAPTER",
    "ANNOTATION_VERSION",
    "ANNOTATION_VERSIONS",
    "AnnotationRecord",
    "JudgeRef",
    "NewerAnnotationError",
    "Note",
    "Removal",
    "add_annotations",
    "annotation_target",
    "append_annotation",
    "author_file",
    "home_annotations",
    "new_id",
    "read_annotation",
]
