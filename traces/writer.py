"""Crash-safe JSON Lines writer: one `<run_id>.jsonl` per run, appended and flushed per event.

A killed run leaves a file that is readable up to its last whole line.

Each line is, byte for byte, `json.dumps(redactor.value(event.model_dump(mode="json")),
ensure_ascii=False, separators=(",", ":"))`. Most lines take a faster road to the same
bytes: pydantic's own serialization, used as is when it has nothing to redact. Model chunks
first go through `ChunkStream`, so a secret the model streams back split over several chunks
is redacted in them as in the assembled message; a chunk whose text ends with the start of
a secret is written once the next one shows whether the secret follows.
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

from pydantic import BaseModel, TypeAdapter

from traces.events import Event, ModelChunk, ModelRequest
from traces.redact import ChunkStream, Redactor

# pydantic writes floats under 1e-4 as `0.00001` or `1e-7` where json.dumps writes `1e-05`
# and `1e-07`; every other JSON value comes out of the two byte for byte.
_SMALL_EXPONENT = re.compile(r"\de-")
_ITEM = TypeAdapter(dict[str, Any])


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
        self._messages = _ItemTexts()
        self._tools = _ItemTexts()
        self._stream: ChunkStream[ModelChunk] = ChunkStream(self._redactor)

    def write(self, event: Event) -> None:
        if self._file is None:
            raise ValueError(f"trace {self.path} is closed")
        if isinstance(event, ModelChunk):
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
        if isinstance(event, ModelRequest):
            line = self._request_line(event)
        else:
            line = self._json(_text(event), lambda: event.model_dump(mode="json")) + "\n"
        data = line.encode()
        written = self._file.write(data) or 0
        while written < len(data):  # a regular file takes it all at once, short of a full disk
            written += self._file.write(data[written:]) or 0

    def _json(self, text: str, python: Callable[[], Any]) -> str:
        """One value's line text: pydantic's `text` when nothing in it needs redacting and
        json.dumps would write the same; else its redacted JSON values through json.dumps."""
        if self._redactor.json_text(text) is not None and not _small_float(text):
            return text
        return json.dumps(self._redactor.value(python()), ensure_ascii=False, separators=(",", ":"))

    def _request_line(self, event: ModelRequest) -> str:
        """Every request carries the whole history (and the same tool schemas), so a long
        run would serialize them over and over. Instead each message and tool is serialized
        and redacted once, and the texts are spliced into the rest of the event's line
        (newline included)."""
        rest = event.model_copy(update={"messages": [], "tools": []})
        line = self._json(_text(rest), lambda: rest.model_dump(mode="json"))
        # In `line` the first `"messages":[]` and `"tools":[]` are the keys themselves: inside
        # a string quotes are escaped, and no object comes before them.
        cut1 = line.index('"messages":[]') + len('"messages":[')
        cut2 = line.index('"tools":[]', cut1) + len('"tools":[')
        messages = self._messages.texts(event.messages, self._item_json)
        tools = self._tools.texts(event.tools, self._item_json)
        # One join: a long history is copied once, not once per `+`.
        return "".join((line[:cut1], messages, line[cut1:cut2], tools, line[cut2:], "\n"))

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
        self._messages, self._tools = _ItemTexts(), _ItemTexts()


def _text(event: BaseModel) -> str:
    # What `model_dump_json()` returns, without its keyword handling: a microsecond an event.
    return event.__pydantic_serializer__.to_json(event).decode()


def _small_float(text: str) -> bool:
    return "0.0000" in text or ("e-" in text and _SMALL_EXPONENT.search(text) is not None)


class _ItemTexts:
    """The line texts of a list's items (a request's messages, say), kept from one request
    to the next. The leading items that are the very dicts of the last list, still equal to
    copies taken then (so not edited in place), keep their text; the rest get a new one."""

    def __init__(self) -> None:
        self._items: list[dict[str, Any]] = []
        self._snapshots: list[Any] = []
        self._texts: list[str] = []

    def texts(self, items: list[dict[str, Any]], to_text: Callable[[Any], str]) -> str:
        same = list(map(operator.is_, items, self._items))  # both scans run in C
        keep = same.index(False) if False in same else len(same)
        if self._snapshots[:keep] != items[:keep]:
            keep = next(i for i in range(keep) if self._snapshots[i] != items[i])
        fresh = items[keep:]
        self._items = list(items)
        self._snapshots = self._snapshots[:keep] + [_snapshot(item) for item in fresh]
        self._texts = self._texts[:keep] + [to_text(item) for item in fresh]
        return ",".join(self._texts)


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
