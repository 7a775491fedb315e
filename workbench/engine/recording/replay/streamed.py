"""What a replay reads of a recording, a turn at a time: a trace file is streamed, never held.

    source = streamed_source(path)            # one checking pass; RecordingError when unusable
    for node in source.model_turn_nodes(): …  # turn by turn, as the model serves them
    for event in source.recorded_events(): …  # the events a replay compares, in order
    source.turn_node(7)                       # one model turn, read when asked (serve-model)

Read whole, the 200,000 events of a long run took 0.7–0.9 GB as models; streamed, a replay
holds one turn's events, the few tool changes and an index of the run's tool calls (their
keys and where each result is in the file) and where each model turn lies, however long the
run. A recording already in
memory (a run only the store holds) is read through the same interface (`RecordedSource`).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Protocol

from agent_core.tools.base import CallKey, call_key
from traces.events import (
    SCHEMA_VERSION,
    Event,
    ModelRequest,
    RunEnd,
    RunStart,
    ToolEnd,
    ToolsChanged,
)
from traces.tree import TurnNode, build_chain
from workbench.engine.recording.replay.field_diff import holds_redactions, is_transport_only
from workbench.engine.recording.runs.load import (
    Recording,
    RecordingError,
    check_damage,
    read_recording_file,
    reading_trace,
)

# A recorded tool call with a result: its turn, id, name, `call_key` and its tool_end's seq.
IndexedCall = tuple[int, str, str, CallKey, int]


class ReplaySource(Protocol):
    """A recorded run as a replay reads it."""

    run_id: str
    run_end: RunEnd | None
    written_in: int  # the trace schema version it was written in
    model_turns: list[int]  # turns in which a request reached the model, in order
    first_request: ModelRequest | None  # the request of the first of them
    recorded_count: int  # how many events a replay compares (`is_transport_only` left out)
    redacted: bool  # a redaction placeholder stands in what the model was sent or said
    tool_changes: list[ToolsChanged]
    tool_calls: list[IndexedCall]  # in the run's order

    @property
    def run_start(self) -> RunStart: ...

    @property
    def origin(self) -> datetime:
        """The first event's time."""
        ...

    @property
    def complete(self) -> bool: ...

    @property
    def stop_point(self) -> str | None: ...

    def recorded_events(self) -> Iterator[Event]: ...

    def model_turn_nodes(self) -> Iterator[TurnNode]: ...

    def tool_end(self, turn: int, seq: int) -> ToolEnd: ...

    def turn_node(self, turn: int) -> TurnNode:
        """The model turn `turn` (one of `model_turns`), read when asked."""
        ...

    def model_requests(self) -> Iterator[ModelRequest]:
        """The last request of each model turn, in `model_turns`' order, one at a time."""
        ...


def _indexed(nodes: Iterable[TurnNode]) -> Iterator[IndexedCall]:
    for node in nodes:
        for call in node.tool_calls:
            start, end = call.start, call.end
            if end is not None:
                key = call_key(start.name, start.arguments, start.arguments_raw)
                yield node.turn, start.call_id, start.name, key, end.seq


class RecordedSource:
    """A `ReplaySource` of a recording in memory."""

    def __init__(self, recording: Recording) -> None:
        self._recording = recording
        self.run_id = recording.run_id
        self.run_start = recording.run_start
        self.run_end = recording.run_end
        self.written_in = recording.written_in
        self.model_turns = recording.model_turns
        first = min(self.model_turns, default=None)
        self.first_request = recording.turns[first].request if first is not None else None
        recorded = [e for e in recording.events if not is_transport_only(e)]
        self.recorded_count = len(recorded)
        self.origin = recording.events[0].ts
        self.redacted = holds_redactions(recorded)
        self.tool_changes = [e for e in recording.events if isinstance(e, ToolsChanged)]
        self.tool_calls = list(_indexed(recording.turns.values()))

    @property
    def complete(self) -> bool:
        return self._recording.complete

    @property
    def stop_point(self) -> str | None:
        return self._recording.stop_point

    def recorded_events(self) -> Iterator[Event]:
        return (e for e in self._recording.events if not is_transport_only(e))

    def model_turn_nodes(self) -> Iterator[TurnNode]:
        return (self._recording.turns[n] for n in self.model_turns)

    def tool_end(self, turn: int, seq: int) -> ToolEnd:
        events = self._recording.events
        # A trace's events are numbered by position; the store's of a run may not be.
        at = events[seq] if seq < len(events) and events[seq].seq == seq else None
        end = at or next(e for e in events if e.seq == seq)
        assert isinstance(end, ToolEnd)
        return end

    def turn_node(self, turn: int) -> TurnNode:
        return self._recording.turns[turn]

    def model_requests(self) -> Iterator[ModelRequest]:
        for node in self.model_turn_nodes():
            assert node.request is not None  # model turns are the turns with a request
            yield node.request


class Scattered(Exception):
    """A turn's events are not together in the run: it is read whole instead."""


@dataclass
class IndexedRun:
    """What one pass over a run's events notes for a replay (`note`, `note_turns`): the
    `ReplaySource` of a run read again on each pass, by `StreamedRun` from its trace file and
    by `stored.StoredRun` from the store."""

    run_id: str = ""
    start: RunStart | None = None
    run_end: RunEnd | None = None
    written_in: int = SCHEMA_VERSION
    model_turns: list[int] = field(default_factory=list)
    first_request: ModelRequest | None = None
    recorded_count: int = 0
    first_ts: datetime | None = None
    redacted: bool = False
    tool_changes: list[ToolsChanged] = field(default_factory=list)
    tool_calls: list[IndexedCall] = field(default_factory=list)
    # Each model turn's first and last event and its last request, by seq.
    spans: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    last_turn: TurnNode | None = None
    _current: TurnNode | None = None  # the turn the model serves now

    @property
    def run_start(self) -> RunStart:
        assert self.start is not None  # `_scan` returns none without one
        return self.start

    @property
    def origin(self) -> datetime:
        assert self.first_ts is not None
        return self.first_ts

    @property
    def complete(self) -> bool:
        return self.run_end is not None

    @property
    def stop_point(self) -> str | None:
        if self.run_end is not None:
            return None
        if self.last_turn is None:
            return "before its first turn"
        state = "complete" if self.last_turn.complete else "incomplete"
        return f"inside turn {self.last_turn.turn} ({state} turn, no run_end)"

    def note(self, event: Event, version: int = SCHEMA_VERSION) -> None:
        """Keep what a replay needs of `event`, the next of the run (written in `version`)."""
        if not self.run_id:
            self.run_id = event.run_id
        if self.first_ts is None:
            self.first_ts = event.ts
        if isinstance(event, RunStart):
            self.written_in = version
            if self.start is None:
                self.start = event
        elif isinstance(event, RunEnd):
            self.run_end = event
        elif isinstance(event, ToolsChanged):
            self.tool_changes.append(event)
        if not is_transport_only(event):
            self.recorded_count += 1
            self.redacted = self.redacted or holds_redactions([event])

    def note_turns(self, events: Iterable[Event]) -> None:
        """Index the turns of `events`, the run's in order (`Scattered` when a turn's events
        are not together)."""
        for node in _turns(events):
            if node.requests:
                self.model_turns.append(node.turn)
                request = node.request
                assert request is not None
                self.spans[node.turn] = (node.events[0].seq, node.events[-1].seq, request.seq)
                if self.first_request is None:
                    self.first_request = request
            self.tool_calls.extend(_indexed([node]))
            self.last_turn = node

    def _events(self) -> Iterator[Event]:
        raise NotImplementedError

    def recorded_events(self) -> Iterator[Event]:
        return (e for e in self._events() if not is_transport_only(e))

    def model_turn_nodes(self) -> Iterator[TurnNode]:
        for node in _turns(self._events()):
            if node.requests:
                self._current = node
                yield node

    def current_tool_end(self, turn: int, seq: int) -> ToolEnd | None:
        """The tool_end `seq` of `turn` when it is the turn the model serves now."""
        current = self._current
        if current is not None and current.turn == turn:
            for event in current.events:
                if event.seq == seq and isinstance(event, ToolEnd):
                    return event
        return None


@dataclass(kw_only=True)
class StreamedRun(IndexedRun):
    """A `ReplaySource` of a trace file, read line by line on each pass (`streamed_source`)."""

    path: Path
    size: int  # the bytes the checking pass read: later passes stop there too
    offsets: array[int] = field(default_factory=lambda: array("q"))  # by seq

    def _events(self) -> Iterator[Event]:
        from traces.user_files import open_regular

        expected = 0
        with open_regular(self.path) as handle:
            for event in _valid(self.path, handle, self.size, self.written_in):
                if event.seq < expected:
                    continue  # a duplicate line, as the reader drops it
                expected = event.seq + 1
                yield event

    def tool_end(self, turn: int, seq: int) -> ToolEnd:
        current = self.current_tool_end(turn, seq)
        if current is not None:
            return current
        from traces.user_files import open_regular

        with open_regular(self.path) as handle:
            handle.seek(self.offsets[seq])
            event = next(_valid(self.path, handle, self.size, self.written_in, 1))
        assert isinstance(event, ToolEnd) and event.seq == seq
        return event

    def turn_node(self, turn: int) -> TurnNode:
        from traces.user_files import open_regular

        first, last, _ = self.spans[turn]
        end = self.offsets[last + 1] if last + 1 < len(self.offsets) else self.size
        with open_regular(self.path) as handle:
            handle.seek(self.offsets[first])
            events = [e for e in _valid(self.path, handle, end, self.written_in) if e.turn == turn]
        (node,) = build_chain(events).turns
        return node

    def model_requests(self) -> Iterator[ModelRequest]:
        from traces.user_files import open_regular

        # Line by line by offset: the chunks and tool events between are never parsed.
        with open_regular(self.path) as handle:
            for turn in self.model_turns:
                handle.seek(self.offsets[self.spans[turn][2]])
                request = next(_valid(self.path, handle, self.size, self.written_in, 1))
                assert isinstance(request, ModelRequest)
                yield request


def _valid(
    path: Path, handle: IO[bytes], size: int, version: int, lines: int | None = None
) -> Iterator[Event]:
    """The valid events of `handle` from where it stands, up to byte `size` (at most
    `lines` lines)."""
    for _, event, _, _ in _valid_at(path, handle, size, version, lines):
        yield event


def _valid_at(
    path: Path,
    handle: IO[bytes],
    size: int,
    version: int,
    lines: int | None = None,
    problems: list[str] | None = None,
    progress: Callable[[int], object] | None = None,
) -> Iterator[tuple[int, Event, int, int]]:
    """(offset, event, schema version, line number) of each valid line of `handle` from where it
    stands, up to byte `size`, at most `lines` lines; bad lines go to `problems`."""
    from traces.line_check import check_lines
    from traces.reader import validate_line

    at = handle.tell()
    positions: list[int] = []

    def raw() -> Iterator[bytes]:
        nonlocal at
        count = 0
        while at < size and (lines is None or count < lines):
            line = handle.readline(size - at)
            if not line:
                return
            positions.append(at)
            at += len(line)
            count += 1
            yield line
            if progress is not None:
                progress(at)

    first = 1
    for line in check_lines(raw(), validate_line, version=version):
        offset = positions[line.number - first]
        # Only the line being read is still wanted: the list stays a line or two long.
        del positions[: line.number - first]
        first = line.number
        if line.event is None:
            if problems is not None:
                problems.append(f"{path}:{line.number}: {line.problem}")
            continue
        yield offset, line.event, line.schema_version, line.number


def _turns(events: Iterable[Event]) -> Iterator[TurnNode]:
    """Each turn of `events` as `traces.tree` builds it, one at a time: a turn's events lie
    together in a trace (`Scattered` when they do not)."""
    group: list[Event] = []
    number: int | None = None
    seen: set[int] = set()
    for event in events:
        if event.turn is None:
            continue
        if event.turn != number:
            if group:
                yield from build_chain(group).turns
            if event.turn in seen:
                raise Scattered
            seen.add(event.turn)
            number, group = event.turn, []
        group.append(event)
    if group:
        yield from build_chain(group).turns


def streamed_source(
    path: Path | str, progress: Callable[[int], object] | None = None
) -> ReplaySource:
    """The trace at `path` as a replay reads it: checked in one pass as `read_recording_file`
    checks it (`RecordingError` alike), then streamed; `progress` hears how many bytes the
    check read. A trace whose turns' events are not together (none the workbench writes) is
    read whole."""
    path = Path(path)
    try:
        return _scan(path, progress)
    except Scattered:
        return RecordedSource(read_recording_file(path))


def _scan(path: Path, progress: Callable[[int], object] | None) -> StreamedRun:
    from traces.user_files import names_a_file, open_regular

    if not names_a_file(path):
        raise RecordingError(f"no trace file at {path}")
    problems: list[str] = []
    with reading_trace(path, problems), open_regular(path) as handle:
        size = handle.seek(0, 2)
        handle.seek(0)
        run = StreamedRun(path=path, size=size)
        lines = _valid_at(path, handle, size, SCHEMA_VERSION, None, problems, progress)
        run.note_turns(_checked(run, lines))
    check_damage(problems, 0, path)  # a cut-off last line is no problem; any other is
    if not run.run_id:
        raise RecordingError(f"corrupt recording {path}: no events")
    if run.start is None:
        raise RecordingError(f"no run_start event in {path}; this is not a complete trace header")
    return run


def _checked(run: StreamedRun, lines: Iterator[tuple[int, Event, int, int]]) -> Iterator[Event]:
    """The events of the checking pass, in order, checked to be one run's numbered 0, 1, 2, …
    (`load.in_sequence`), with what the run keeps of them noted on `run`."""
    for offset, event, version, number in lines:
        if run.run_id and event.run_id != run.run_id:
            raise RecordingError(
                f"corrupt recording {run.path}: seq {event.seq} belongs to run {event.run_id}"
            )
        expected = len(run.offsets)
        if event.seq < expected:  # as `traces.reader` reports it
            where = f"{run.path}:{number}: duplicate seq {event.seq}"
            raise RecordingError(f"corrupt recording {run.path}: {where}")
        if event.seq != expected:
            raise RecordingError(
                f"corrupt recording {run.path}: expected seq {expected}, found {event.seq}"
            )
        run.offsets.append(offset)
        run.note(event, version)
        yield event
