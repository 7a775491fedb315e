"""Crash-safe JSON Lines writer: one `<run_id>.jsonl` per run, appended and flushed per event.

A killed run leaves a file that is readable up to its last whole line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Protocol

from traces.events import Event
from traces.redact import Redactor


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

    def write(self, event: Event) -> None:
        if self._file is None:
            raise ValueError(f"trace {self.path} is closed")
        line = self._redactor.json_text(event.model_dump_json())
        if line is None:
            record = self._redactor.value(event.model_dump(mode="json"))
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        self._file.write(line + "\n")
        self._file.flush()

    def sync(self) -> None:
        if self._file is not None:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class MemorySink:
    """Keeps events in a list; for tests, replay and benchmarks."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def write(self, event: Event) -> None:
        self.events.append(event)

    def close(self) -> None:
        pass
