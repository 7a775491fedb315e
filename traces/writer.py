"""Crash-safe JSON Lines writer: one `<run_id>.jsonl` per run, appended and flushed per event.

A killed run leaves a file that is readable up to its last whole line.

Each line is, byte for byte, `json.dumps(redactor.value(event.model_dump(mode="json")),
ensure_ascii=False, separators=(",", ":"))`: the pydantic models define the contract. Most
lines take a faster road to the same bytes, without that round trip through Python values:
pydantic's own serializer writes the event's JSON text straight from the model (in Rust;
`ts` through `ts_text`, which formats each second once), and the text is used as is when it
has nothing to redact and json.dumps would write the same.
Model chunks first go through `ChunkStream`, so a secret the model streams back split over
several chunks is redacted in them as in the assembled message; a chunk whose text ends
with the start of a secret is written once the next one shows whether the secret follows.
"""

from __future__ import annotations

import json
import operator
import os
import re
from collections.abc import Callable
from io import FileIO
from pathlib import Path
from typing import Any, Protocol

from pydantic import TypeAdapter

from traces.events import Event, ModelChunk, ModelRequest
from traces.redact import ChunkStream, Redactor

# pydantic writes floats under 1e-4 as `0.00001` or `1e-7` where json.dumps writes `1e-05`
# and `1e-07`; every other JSON value comes out of the two byte for byte.
_SMALL_EXPONENT = re.compile(r"\de-")
_ITEM = TypeAdapter(dict[str, Any])
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# A request's messages and tools are left out of pydantic's text and spliced back in from
# texts kept from request to request (a set: pydantic takes it faster than a frozenset).
_HISTORY = {"messages", "tools"}


class Sink(Protocol):
    def write(self, event: Event) -> None: ...

    def close(self) -> None: ...


class JsonlWriter:
    """Appends events to `<folder>/<run_id>.jsonl`, redacting secrets before they hit disk."""

    def __init__(self, folder: Path, run_id: str, redactor: Redactor | None = None) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{run_id}.jsonl"
        self._redactor = redactor or Redactor()
        # Unbuffered: each event is one write call, so it is in the file once `write` returns.
        self._file: FileIO | None = FileIO(self.path, "a")
        # The last request's messages and tools, with their line texts.
        self._messages = _JoinedItems()
        self._tools = _JoinedItems()
        self._stream: ChunkStream[ModelChunk] = ChunkStream(self._redactor)

    def write(self, event: Event) -> None:
        if self._file is None:
            raise ValueError(f"trace {self.path} is closed")
        if type(event) is ModelChunk:
            # Chunks go through the stream's redaction, which may hold one back a moment.
            self._write_chunks(self._stream.push(event, event.data))
            return
        self._write_chunks(self._stream.flush())
        self._write(event)

    def _write_chunks(self, chunks: list[tuple[ModelChunk, dict[str, Any]]]) -> None:
        for chunk, data in chunks:
            self._write(chunk if data is chunk.data else chunk.model_copy(update={"data": data}))

    def _write(self, event: Event) -> None:
        assert self._file is not None
        if type(event) is ModelRequest:
            parts = self._request_line(event)
            written = os.writev(self._file.fileno(), parts)
            data = b"".join(parts) if written < sum(map(len, parts)) else b""
        else:  # `_json`, inlined: this runs for every chunk of every answer
            text = event.__pydantic_serializer__.to_json(event).decode()
            if self._redactor.json_text(text) is None or _small_float(text):
                text = _ENCODE(self._redactor.value(event.model_dump(mode="json")))
            data = (text + "\n").encode()
            written = self._file.write(data) or 0
        while written < len(data):  # a regular file takes it all at once, short of a full disk
            written += self._file.write(data[written:]) or 0

    def _json(self, text: str, python: Callable[[], Any]) -> str:
        """One value's line text: pydantic's `text` when nothing in it needs redacting and
        json.dumps would write the same; else its redacted JSON values through json.dumps."""
        if self._redactor.json_text(text) is not None and not _small_float(text):
            return text
        return _ENCODE(self._redactor.value(python()))

    def _request_line(self, event: ModelRequest) -> list[bytes | bytearray]:
        """Every request carries the whole history (and the same tool schemas), so a long
        run would serialize them over and over. Instead each message and tool is serialized
        and redacted once, and their joined texts are written between the pieces of the rest
        of the event's line (newline included), with one `writev`: the history is neither
        copied nor encoded again."""
        text = event.__pydantic_serializer__.to_json(event, exclude=_HISTORY).decode()
        line = self._json(text, lambda: event.model_dump(mode="json", exclude=_HISTORY))
        # Both are written right after `attempt`, before `params`. The first `,"params":` is
        # the key itself: only the run id and ts strings (where quotes are escaped) and
        # numbers, booleans and null come before it.
        cut = line.index(',"params":')
        messages = self._messages.joined(event.messages, self._item_json)
        tools = self._tools.joined(event.tools, self._item_json)
        return [
            f'{line[:cut]},"messages":['.encode(),
            messages,
            b'],"tools":[',
            tools,
            f"]{line[cut:]}\n".encode(),
        ]

    def _item_json(self, item: dict[str, Any]) -> str:
        text = _ITEM.dump_json(item).decode()
        return self._json(text, lambda: _ITEM.dump_python(item, mode="json"))

    def sync(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._write_chunks(self._stream.flush())
            self._file.close()
            self._file = None
        self._messages, self._tools = _JoinedItems(), _JoinedItems()


def _small_float(text: str) -> bool:
    return "0.0000" in text or ("e-" in text and _SMALL_EXPONENT.search(text) is not None)


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

    def joined(self, items: list[dict[str, Any]], to_text: Callable[[Any], str]) -> bytearray:
        """The joined texts; valid until the next call."""
        same = list(map(operator.is_, items, self._items))  # both scans run in C
        keep = same.index(False) if False in same else len(same)
        if self._snapshots[:keep] != items[:keep]:
            keep = next(i for i in range(keep) if self._snapshots[i] != items[i])
        fresh = items[keep:]
        texts = [to_text(item).encode() for item in fresh]  # may raise: before any change
        self._items = list(items)
        self._snapshots = self._snapshots[:keep] + [_snapshot(item) for item in fresh]
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
        return {key: _snapshot(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_snapshot(item) for item in value]
    return value


class MemorySink:
    """Keeps events in a list; for tests, replay and benchmarks."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def write(self, event: Event) -> None:
        self.events.append(event)

    def close(self) -> None:
        pass
