"""A run of the store as a replay reads it, a page of events at a time: a run only the store
holds (its trace ingested from elsewhere and gone since) is never read whole.

    source = stored_source(open_store, run_id)   # one indexing pass; RecordingError
    outcome = await replay_run(source)           # as `streamed.streamed_source`'s
    source = replay_source("3fa2", home)         # the trace streamed, else the store's

The pass and each later one read the run's events in seq order, STORE_PAGE at a time; a
model turn (`turn_node`) and a tool result (`tool_end`) are read by turn when asked.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from traces.events import Event, ModelRequest, ToolEnd
from traces.tree import TurnNode, build_chain
from workbench.engine.recording.replay.streamed import (
    IndexedRun,
    RecordedSource,
    ReplaySource,
    Scattered,
    streamed_source,
)
from workbench.engine.recording.runs.load import (
    RecordingError,
    TraceGone,
    index_events,
    trace_path,
)
from workbench.engine.recording.runs.parent import OpenStore

# How many events of a run one read of the store takes: a page of a long run's model requests
# (each resending the history) stays some MB.
STORE_PAGE = 100


@dataclass(kw_only=True)
class StoredRun(IndexedRun):
    """A `ReplaySource` of a run of the store, read page by page on each pass; `open_store`
    opens the store for each read, so nothing holds it in between."""

    open_store: OpenStore

    def _pages(self, types: Iterable[str] | None = None) -> Iterator[Event]:
        done = 0
        while True:
            with self.open_store() as store:
                page = store.events(self.run_id, offset=done, limit=STORE_PAGE, types=types)
            yield from page
            if len(page) < STORE_PAGE:
                return
            done += len(page)

    def _events(self) -> Iterator[Event]:
        return self._pages()

    def _turn(self, turn: int, types: list[str] | None = None) -> list[Event]:
        with self.open_store() as store:
            events = store.events(self.run_id, types=types, turn=turn)
        return [event for event in events if event.turn == turn]

    def turn_node(self, turn: int) -> TurnNode:
        (node,) = build_chain(self._turn(turn)).turns
        return node

    def tool_end(self, turn: int, seq: int) -> ToolEnd:
        found = self.current_tool_end(turn, seq)
        if found is None:
            ends = self._turn(turn, ["tool_end"])
            found = next(e for e in ends if e.seq == seq and isinstance(e, ToolEnd))
        return found

    def model_requests(self) -> Iterator[ModelRequest]:
        # The last request of each turn that has one: the model turns, in order.
        last: ModelRequest | None = None
        for request in self._pages(["model_request"]):
            assert isinstance(request, ModelRequest)
            if request.turn is None:
                continue
            if last is not None and request.turn != last.turn:
                yield last
            last = request
        if last is not None:
            yield last


def replay_source(ref: str | Path, home: Path) -> ReplaySource:
    """A run by trace path, or by run id / unique prefix of the home (`load.trace_path`),
    as a replay reads it: its trace streamed, or the home's store a page at a time when the
    store holds the run but its trace file is gone."""
    try:
        path = trace_path(ref, home)
    except TraceGone as gone:
        from traces.store import TraceStore

        return stored_source(lambda: TraceStore.for_home(home), gone.run_id)
    return streamed_source(path)


def stored_source(open_store: OpenStore, run_id: str) -> ReplaySource:
    """The run `run_id` of the store as a replay reads it, indexed in one pass (a run whose
    turns' events are not together, none the workbench writes, is read whole);
    `RecordingError` when the store holds no run_start of it."""
    run = StoredRun(open_store=open_store, run_id=run_id)
    try:
        run.note_turns(_noted(run, run._pages()))
    except Scattered:
        with open_store() as store:
            return RecordedSource(index_events(store.events(run_id)))
    if run.start is None:
        raise RecordingError(f"run {run_id} has no run_start event in the store")
    return run


def _noted(run: IndexedRun, events: Iterable[Event]) -> Iterator[Event]:
    for event in events:
        run.note(event)
        yield event
