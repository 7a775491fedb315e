"""Crash-safe JSON Lines writer: one `<run_id>.jsonl` per run, appended and flushed per event.

A killed run leaves a file that is readable up to its last whole line.

Each line is, byte for byte, `json.dumps(redactor.value(event.model_dump(mode="json")),
ensure_ascii=False, separators=(",", ":"))`. Most lines take a faster road to the same
bytes: pydantic's own serialization, used as is when it has nothing to redact.
"""

from __future__ import annotations

import json
import operator
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol

from pydantic import TypeAdapter

from traces.events import Event, ModelRequest
from traces.redact import Redactor

# pydantic writes floats under 1e-4 as `0.00001` or `1e-7` where json.dumps writes `1e-05`
# and `1e-07`; every other JSON value comes out of the two byte for byte.
# "e-" after a digit; written literal-first so the regex engine can scan for "e-" quickly.
_SMALL_EXPONENT = re.compile(r"e-(?<=\de-)")
_MESSAGE = TypeAdapter(dict[str, Any])
_NO_MESSAGES = '"messages":[]'


class Sink(Protocol):
    def write(self, event: Event) -> None: ...

    def close(self) -> None: ...


class JsonlWriter:
    """Appends events to `<folder>/<run_id>.jsonl`, redacting secrets before they hit disk."""

    def __init__(self, folder: Path, run_id: str, redactor: Redactor | None = None) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{run_id}.jsonl"
        self._redactor = redactor or Redactor()
        self._file: IO[str] | None = self.path.open("a", encoding="utf-8")
        # The last request's messages, copies of them as they were, and their line texts.
        self._sent: list[dict[str, Any]] = []
        self._snapshots: list[Any] = []
        self._texts: list[str] = []

    def write(self, event: Event) -> None:
        if self._file is None:
            raise ValueError(f"trace {self.path} is closed")
        if isinstance(event, ModelRequest):
            line = self._request_line(event)
        else:
            line = self._json(event.model_dump_json(), lambda: event.model_dump(mode="json"))
        self._file.write(line + "\n")
        self._file.flush()

    def _json(self, text: str, python: Callable[[], Any]) -> str:
        """One value's line text: pydantic's `text` when nothing in it needs redacting and
        json.dumps would write the same; else its redacted JSON values through json.dumps."""
        if self._redactor.json_text(text) is not None and not _small_float(text):
            return text
        return json.dumps(self._redactor.value(python()), ensure_ascii=False, separators=(",", ":"))

    def _request_line(self, event: ModelRequest) -> str:
        """Every request carries the whole history, so a long run would serialize it over
        and over. Instead the leading messages that are the very dicts of the last request,
        still equal to their snapshots (not edited in place), reuse their text; only the
        rest is serialized and redacted, and all are spliced into the line."""
        messages = event.messages
        same = list(map(operator.is_, messages, self._sent))
        keep = same.index(False) if False in same else len(same)
        if self._snapshots[:keep] != messages[:keep]:
            keep = next(i for i in range(keep) if self._snapshots[i] != messages[i])
        fresh = messages[keep:]
        self._sent = list(messages)
        self._snapshots = self._snapshots[:keep] + [_snapshot(m) for m in fresh]
        self._texts = self._texts[:keep] + [self._message_json(m) for m in fresh]
        rest = event.model_copy(update={"messages": []})
        line = self._json(rest.model_dump_json(), lambda: rest.model_dump(mode="json"))
        # The first `"messages":[]` is the key itself: inside a string its quotes are escaped.
        at = line.index(_NO_MESSAGES) + len(_NO_MESSAGES) - 1
        return line[:at] + ",".join(self._texts) + line[at:]

    def _message_json(self, message: dict[str, Any]) -> str:
        text = _MESSAGE.dump_json(message).decode()
        return self._json(text, lambda: _MESSAGE.dump_python(message, mode="json"))

    def sync(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._sent, self._snapshots, self._texts = [], [], []


def _small_float(text: str) -> bool:
    return "0.0000" in text or _SMALL_EXPONENT.search(text) is not None


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
