"""The one place events are stamped: run id, gapless seq, UTC time, turn.

Whoever observes something during a run (the model wrapper, the tool runner, the MCP
client, the loop) calls `Recorder.emit`; the event goes to every sink at once and into an
outbox that the loop drains and yields, so the JSONL file, the CLI printer and the TUI all
see the same stream. A failing sink is reported once and never fails the run.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from traces.events import Event, EventBase, ModelChunk, RunStart, utc_now
from traces.writer import JsonlWriter, Sink

E = TypeVar("E", bound=EventBase)
_KEEP_TURN: Any = object()


class Recorder:
    """Stamps and fans out a run's events.

    With `run_start_first`, events emitted before `run_start` (MCP handshake frames of
    servers started before the run, say) are held and written right after it, keeping
    their own time, so every trace begins with its run_start at seq 0. Without `outbox`,
    events only go to the sinks: for a recorder nobody drains (the proxy's), which would
    otherwise keep every event of a run in memory. A failing sink is said once on stderr,
    or told to `on_sink_error` (with a line saying why) by an owner that says it itself.
    """

    def __init__(
        self,
        run_id: str,
        sinks: list[Sink] | None = None,
        *,
        run_start_first: bool = False,
        outbox: bool = True,
        on_sink_error: Callable[[str], None] | None = None,
    ) -> None:
        self.run_id = run_id
        self.sinks: list[Sink] = list(sinks or [])
        self.turn: int | None = None
        self._seq = 0
        self._outbox: deque[Any] = deque()
        self._keep = outbox
        self._held: list[EventBase] | None = [] if run_start_first else None
        self.sink_errors: list[str] = []
        self._on_sink_error = on_sink_error

    @property
    def next_seq(self) -> int:
        return self._seq

    def emit(
        self,
        cls: type[E],
        *,
        turn: int | None = _KEEP_TURN,
        at: datetime | None = None,
        **fields: Any,
    ) -> E:
        """Build an event of type `cls`, stamp it, write it to every sink and queue it.
        `at` is when it happened, for an observer that records it afterwards (default now)."""
        event = cls(
            run_id=self.run_id,
            seq=self._seq,
            ts=at or utc_now(),
            turn=self.turn if turn is _KEEP_TURN else turn,
            **fields,
        )
        if self._held is not None:
            if not isinstance(event, RunStart):
                self._held.append(event)  # its seq is given when it is released
                return event
            held, self._held = self._held, None
            self._publish(event)
            for early in held:
                self._publish(early.model_copy(update={"seq": self._seq}))
            return event
        self._publish(event)
        return event

    def emit_chunk(
        self,
        *,
        turn: int | None,
        at: datetime,
        attempt: int,
        index: int,
        elapsed_ms: float,
        data: dict[str, Any],
    ) -> None:
        """`emit(ModelChunk, ...)` for a recorder whose only sinks are trace files and that
        keeps no outbox (the proxy's): each writes the chunk from its fields
        (`JsonlWriter.write_chunk`), mostly without building its event."""
        if (
            self._keep
            or self._held is not None
            or not self.sinks
            or not all(type(sink) is JsonlWriter for sink in self.sinks)
        ):
            self.emit(
                ModelChunk,
                turn=turn,
                at=at,
                attempt=attempt,
                index=index,
                elapsed_ms=elapsed_ms,
                data=data,
            )
            return
        seq = self._seq
        self._seq += 1
        for sink in self.sinks:
            try:
                sink.write_chunk(self.run_id, seq, at, turn, attempt, index, elapsed_ms, data)  # type: ignore[attr-defined]
            except Exception as exc:  # a broken sink must not end the run
                self._sink_failed(sink, exc)

    def _publish(self, event: EventBase) -> None:
        self._seq += 1
        for sink in self.sinks:
            try:
                sink.write(event)  # type: ignore[arg-type]
            except Exception as exc:  # a broken sink must not end the run
                self._sink_failed(sink, exc)
        if self._keep:
            self._outbox.append(event)

    def _sink_failed(self, sink: Sink, exc: Exception) -> None:
        message = f"trace sink {type(sink).__name__} failed: {exc}"
        if message not in self.sink_errors:
            self.sink_errors.append(message)
            if self._on_sink_error is not None:
                self._on_sink_error(str(exc))
            else:
                print(f"workbench: {message}", file=sys.stderr)

    def push(self, item: Any) -> None:
        """Queue an in-memory item (e.g. a text delta) that is streamed but not recorded."""
        if self._keep:
            self._outbox.append(item)

    def drain(self) -> list[Event | Any]:
        items = list(self._outbox)
        self._outbox.clear()
        return items

    def close(self) -> None:
        for sink in self.sinks:
            try:
                sink.close()
            except Exception as exc:
                print(f"workbench: closing trace sink failed: {exc}", file=sys.stderr)
