"""Crash-safe JSON Lines writer: one `<run_id>.jsonl` per run, appended and flushed per event.

A killed run leaves a file that is readable up to its last whole line.

Each line is, byte for byte, pydantic's JSON of the event's redacted JSON values,
`to_json(redactor.value(event.model_dump(mode="json")))`, and a newline: the
pydantic models define the contract. Most lines take a faster road to the same bytes: the
event's JSON text written by pydantic's serializer straight from the model (in Rust; `ts`
through `ts_text`, which formats each second once), used as is when a scan of the text
shows nothing to redact (`Redactor.json_clean`).
Model chunks first go through `ChunkStream`, so a secret the model streams back split over
several chunks is redacted in them as in the assembled message; a chunk whose text ends
with the start of a secret is written once the next one shows whether the secret follows.
A chunk goes straight through when its JSON text shows neither (`ChunkStream.passes`).
"""

from __future__ import annotations

import contextlib
import operator
import os
from collections.abc import Callable
from datetime import UTC, datetime
from io import FileIO
from pathlib import Path
from typing import Any, Protocol

import pydantic_core

from traces.events import Event, EventBase, ModelChunk, ModelRequest, ts_text
from traces.redact import ChunkStream, Redactor
from traces.run_names import is_safe_run_id

# A request's messages and tools are left out of pydantic's text and spliced back in from
# texts kept from request to request (a set: pydantic takes it faster than a frozenset).
_HISTORY = {"messages", "tools"}
# The keys a model chunk's line has before its data.
_CHUNK_ENVELOPE = [name for name in ModelChunk.model_fields if name != "data"]
# Where a chunk's data begins in its line: the first `,"data":` is the key itself (only the
# run id and ts strings, where quotes are escaped, and numbers and null come before it).
_DATA_KEY = ',"data":'


def to_json(value: Any) -> bytes:
    """A JSON value's text as the event models write theirs (NaN and infinities as null)."""
    return pydantic_core.to_json(value, inf_nan_mode="null")


class Sink(Protocol):
    def write(self, event: Event) -> None: ...

    def close(self) -> None: ...


class JsonlWriter:
    """Appends events to `<folder>/<run_id>.jsonl`, redacting secrets before they hit disk.

    A run recorded in a home opens its writer with `traces.home.open_run_trace`, which
    gives it the home's redaction."""

    def __init__(self, folder: Path, run_id: str, redactor: Redactor | None = None) -> None:
        if not is_safe_run_id(run_id):  # the file is named by the id: never a path part
            raise ValueError(f"run id {run_id!r} cannot name a trace file")
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{run_id}.jsonl"
        self.redactor = redactor or Redactor()
        # Unbuffered: each event is one write call, so it is in the file once `write` returns.
        # Readable too: after a failed write the file is cut back to its last whole line.
        self._file: FileIO | None = FileIO(self.path, "a+")
        # The last request's messages and tools, with their line texts.
        self._messages = _JoinedItems()
        self._tools = _JoinedItems()
        self._stream: ChunkStream[ModelChunk] = ChunkStream(self.redactor)
        self._envelope_key: tuple[str, int] | None = None
        self._envelope_ok = False
        self._chunk_heads: dict[tuple[str, int | None, int], tuple[str, str]] = {}
        # Why the trace could not be written whole (a full disk, say): the file then ends
        # at its last whole line and nothing more is written to it.
        self.failure: str | None = None

    def write(self, event: Event) -> None:
        if self.failure is not None:
            return  # the trace ends at its last whole line; `failure` says why
        try:
            self._write(event)
        except OSError as exc:
            self._cut(exc)
            raise

    def _write(self, event: Event) -> None:
        file = self._file
        if file is None:
            raise ValueError(f"trace {self.path} is closed")
        if type(event) is ModelRequest:
            if self._stream.holding:
                self._write_chunks(self._stream.flush())
            self._put_parts(self._request_parts(event))
            return
        # `_line`, inlined: this runs for every event.
        line = event.__pydantic_serializer__.to_json(event)
        text = line.decode()
        start = 0
        if type(event) is ModelChunk:
            data_at = text.find(_DATA_KEY)
            # Chunks go through the stream's redaction, which may hold one back a moment;
            # most show by their data's text alone that it would pass them straight on.
            if not self._stream.passes(text, data_at):
                ready = self._stream.push(event, event.data)
                if ready != [(event, event.data)]:  # held, or after others, or redacted
                    self._write_chunks(ready)
                    return
            if data_at > 0 and self._envelope_clean(event.run_id):
                start = data_at
        elif self._stream.holding:
            self._write_chunks(self._stream.flush())
        if not self.redactor.json_clean(text, start):
            line = to_json(self.redactor.value(event.model_dump(mode="json")))
        data = line + b"\n"
        written = file.write(data) or 0
        if written < len(data):
            self._put(data[written:])

    def _envelope_clean(self, run_id: str) -> bool:
        """Whether nothing to redact can occur in a chunk's fields before its data (so that
        only the data's text need be read): asked again when the run id or the redactor's
        secrets change."""
        key = (run_id, self.redactor.generation)
        if key != self._envelope_key:
            self._envelope_key = key
            self._envelope_ok = self.redactor.absent_from([*_CHUNK_ENVELOPE, run_id, "model_chunk"])
        return self._envelope_ok

    def write_chunk(
        self,
        run_id: str,
        seq: int,
        ts: datetime,
        turn: int | None,
        attempt: int,
        index: int,
        elapsed_ms: float,
        data: dict[str, Any],
    ) -> None:
        """Write the `ModelChunk` of these fields: the line `write` writes for it, most often
        put together here without the event (building and serializing an event cost more
        than the rest of recording a chunk; a proxy records every chunk of every answer).
        Its data is a JSON object as read (string keys). A chunk whose fields the event
        would change (an int for a float, another time zone), or that holds something to
        redact or that may be held back, goes by `write`."""
        if self.failure is not None:
            return
        plain = (
            type(seq) is int
            and 0 <= seq < 2**63
            and (turn is None or (type(turn) is int and 1 <= turn < 2**31))
            and type(attempt) is int
            and type(index) is int
            and index >= 0
            and type(elapsed_ms) is float
            and type(run_id) is str
            and type(ts) is datetime
            and ts.tzinfo is UTC
            and type(data) is dict
            and all(type(key) is str for key in data)
            and self._file is not None
        )
        if plain:
            head = self._chunk_heads.get((run_id, turn, attempt))
            if head is None:
                head = self._chunk_head(run_id, turn, attempt)
            # As pydantic writes the event (tests/contract/test_writer_equivalence.py).
            envelope = (
                f'{head[0]}{seq},"ts":"{ts_text(ts)}"{head[1]}{index},"elapsed_ms":'
                f"{to_json(elapsed_ms).decode()}"
            )
            data_at = len(envelope)  # where `write` finds `_DATA_KEY` in the same line
            text = f"{envelope}{_DATA_KEY}{to_json(data).decode()}}}"
            if (
                self._stream.passes(text, data_at)
                and self._envelope_clean(run_id)
                and self.redactor.json_clean(text, data_at)
            ):
                try:
                    self._put(text.encode() + b"\n")
                except OSError as exc:
                    self._cut(exc)
                    raise
                return
        chunk = ModelChunk(
            run_id=run_id,
            seq=seq,
            ts=ts,
            turn=turn,
            attempt=attempt,
            index=index,
            elapsed_ms=elapsed_ms,
            data=data,
        )
        self.write(chunk)

    def _chunk_head(self, run_id: str, turn: int | None, attempt: int) -> tuple[str, str]:
        """A chunk line's text before its seq, and from after its ts to its index."""
        if len(self._chunk_heads) > 64:  # one run's turns and attempts, a few at a time
            self._chunk_heads.clear()
        head = (
            f'{{"run_id":{to_json(run_id).decode()},"seq":',
            f',"turn":{"null" if turn is None else turn},"type":"model_chunk",'
            f'"attempt":{attempt},"index":',
        )
        self._chunk_heads[(run_id, turn, attempt)] = head
        return head

    def _write_chunks(self, chunks: list[tuple[ModelChunk, dict[str, Any]]]) -> None:
        for chunk, data in chunks:
            self._put(
                self._line(chunk if data is chunk.data else chunk.model_copy(update={"data": data}))
            )

    def _line(self, event: EventBase) -> bytes:
        text = event.__pydantic_serializer__.to_json(event)
        return self._json(text, lambda: event.model_dump(mode="json")) + b"\n"

    def _json(self, text: bytes, values: Callable[[], Any]) -> bytes:
        """One value's JSON text: pydantic's `text` when nothing in it needs redacting; else
        its JSON `values`, redacted, written by pydantic."""
        if self.redactor.json_clean(text.decode()):
            return text
        return to_json(self.redactor.value(values()))

    def _put(self, data: bytes) -> None:
        assert self._file is not None
        written = self._file.write(data) or 0
        while written < len(data):  # a regular file takes it all at once, short of a full disk
            written += self._file.write(data[written:]) or 0

    def _put_parts(self, parts: list[bytes | bytearray]) -> None:
        assert self._file is not None
        written = os.writev(self._file.fileno(), parts)
        if written < sum(map(len, parts)):
            self._put(b"".join(parts)[written:])

    def _request_parts(self, event: ModelRequest) -> list[bytes | bytearray]:
        """Every request carries the whole history (and the same tool schemas), so a long
        run would serialize them over and over. Instead each message and tool is serialized
        and redacted once, and their joined texts are written between the pieces of the rest
        of the event's line (newline included), with one `writev`: the history is neither
        copied nor encoded again."""
        text = event.__pydantic_serializer__.to_json(event, exclude=_HISTORY)
        line = self._json(text, lambda: event.model_dump(mode="json", exclude=_HISTORY))
        # Both are written right after `attempt`, before `params`. The first `,"params":` is
        # the key itself: only the run id and ts strings (where quotes are escaped) and
        # numbers, booleans and null come before it.
        cut = line.index(b',"params":')
        messages = self._messages.joined(event.messages, self._item_json)
        tools = self._tools.joined(event.tools, self._item_json)
        return [
            line[:cut],
            b',"messages":[',
            messages,
            b'],"tools":[',
            tools,
            b"]",
            line[cut:],
            b"\n",
        ]

    def _item_json(self, item: dict[str, Any]) -> bytes:
        return self._json(to_json(item), lambda: pydantic_core.to_jsonable_python(item))

    def sync(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())

    def _cut(self, exc: OSError) -> None:
        """After a failed write, cut the file back to the end of its last whole line (a
        write to a full disk writes what fits), so it reads and ingests as a run that
        stopped there; shrinking a file needs no room."""
        self.failure = exc.strerror or str(exc)
        if self._file is None:
            return
        fd = self._file.fileno()
        with contextlib.suppress(OSError):
            end = os.fstat(fd).st_size
            while end > 0:
                start = max(0, end - 65536)
                found = os.pread(fd, end - start, start).rfind(b"\n")
                if found >= 0:
                    end = start + found + 1
                    break
                end = start
            os.ftruncate(fd, end)

    def close(self) -> None:
        if self._file is not None:
            if self.failure is None:
                try:
                    self._write_chunks(self._stream.flush())
                except OSError as exc:
                    self._cut(exc)
            self._file.close()
            self._file = None
        self._messages, self._tools = _JoinedItems(), _JoinedItems()


class _JoinedItems:
    """A list's items (a request's messages, say) as their comma-joined line texts, kept
    from one request to the next. The leading items that are the very dicts of the last
    list, still equal to copies taken then (so not edited in place), keep their text; the
    rest get a new one, appended to the joined bytes."""

    def __init__(self) -> None:
        self._items: list[dict[str, Any]] = []
        self._snapshots: list[Any] = []
        self._ends: list[int] = []  # where each item's text ends in `_joined`
        self._joined = bytearray()

    def joined(self, items: list[dict[str, Any]], to_text: Callable[[Any], bytes]) -> bytearray:
        """The joined texts; valid until the next call."""
        keep = len(self._items)
        # The same dicts as last time (scans in C; the common case: nothing else to find)...
        if keep > len(items) or not all(map(operator.is_, items, self._items)):
            same = list(map(operator.is_, items, self._items))
            keep = same.index(False) if False in same else len(same)
        # ...and not edited in place since.
        kept = self._snapshots if keep == len(self._snapshots) else self._snapshots[:keep]
        if kept != items[:keep]:
            keep = next(i for i in range(keep) if self._snapshots[i] != items[i])
        fresh = items[keep:]
        texts = [to_text(item) for item in fresh]  # may raise: before any change
        self._items = list(items)
        del self._snapshots[keep:]
        self._snapshots += map(_snapshot, fresh)
        del self._ends[keep:]
        del self._joined[self._ends[-1] if self._ends else 0 :]
        for text in texts:
            if self._ends:
                self._joined += b","
            self._joined += text
            self._ends.append(len(self._joined))
        return self._joined


def _snapshot(value: Any) -> Any:
    """A copy deep enough to notice a message edited in place (strings are shared)."""
    if isinstance(value, dict):
        return {
            key: _snapshot(item) if isinstance(item, _CONTAINERS) else item
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_snapshot(item) if isinstance(item, _CONTAINERS) else item for item in value]
    return value


_CONTAINERS = (dict, list)


class MemorySink:
    """Keeps events in a list; for tests, replay and benchmarks."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def write(self, event: Event) -> None:
        self.events.append(event)

    def close(self) -> None:
        pass
