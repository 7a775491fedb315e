"""What a fork reads of the run it forks (`fork.plan_fork`, `dry_run.dry_run`): its
run_start, the request it sent at a turn, the calls whose results a history holds, the
recorded result of a call made again, and what the turns before the fork turn did.

Two sources answer alike: a `Recording` in memory (a trace file, a bundle), and the store,
which `StoredParent` reads by turn and by call: forking the last turn of a run of 200,000
events reads that turn's request and the few calls it names, never the whole run.

    parent = StoredParent.load(lambda: TraceStore.for_home(home), run_id)
    plan = plan_fork(parent, ForkRequest(turn=parent.model_turns[-1]))
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar

from agent_core.tools.base import CallKey, call_key
from traces.events import ModelApi, ModelRequest, ModelResponse, RunStart, ToolEnd, ToolStart
from traces.home import NoHomeError, existing_home
from traces.tree import build_chain
from workbench.engine.recording.runs.load import (
    Recording,
    RecordingError,
    load_recording,
    sent_history,
)

if TYPE_CHECKING:
    from traces.store import TraceStore
    from traces.store.progress import Progress

# A tool call of the parent: its turn, its start and its end (None: no result recorded).
RecordedToolCall: TypeAlias = tuple[int, ToolStart, ToolEnd | None]
# Opens the store for one read (`Backend._session`, or `TraceStore.for_home` and close).
OpenStore: TypeAlias = Callable[[], AbstractContextManager["TraceStore"]]


@dataclass(frozen=True)
class PrefixTurn:
    """A turn before the fork turn, served from the log: its model calls and tool calls."""

    turn: int
    model_calls: int
    tool_calls: list[str]  # tool names, in order


class ParentRun(Protocol):
    """The run a fork starts from, as the fork reads it."""

    @property
    def run_id(self) -> str: ...

    @property
    def run_start(self) -> RunStart: ...

    @property
    def api(self) -> ModelApi:
        """The wire format of the run's model calls (its first one's; chat when none)."""
        ...

    @property
    def model_turns(self) -> list[int]:
        """Turns in which a request reached the model, in order."""
        ...

    def request(self, turn: int) -> ModelRequest | None:
        """What the model was last sent in `turn` (None: no model call then)."""
        ...

    def history(self, turn: int) -> list[dict[str, Any]]:
        """The whole conversation `turn` sent (`load.sent_history`)."""
        ...

    def calls(self, call_ids: Collection[str]) -> list[RecordedToolCall]:
        """The calls with these ids made in a turn, in order (a provider may reuse an id)."""
        ...

    def recorded_call(self, key: CallKey) -> tuple[ToolStart, ToolEnd] | None:
        """The first call made in a turn with this `call_key` and a recorded result."""
        ...

    def result_counts(self) -> dict[str, int]:
        """How many calls of each tool (made in a turn) have a recorded result."""
        ...

    def turns_before(self, turn: int, ends: int | None = None) -> tuple[list[PrefixTurn], int]:
        """The turns before `turn`, in order, with what they called, and how many there
        are: every one, or (`ends`) only the first and last `ends` of more than three
        times as many (what a plan's line names)."""
        ...


class RecordedParent:
    """A `ParentRun` of a recording in memory."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.run_id = recording.run_id
        self.run_start = recording.run_start

    @property
    def api(self) -> ModelApi:
        return self.recording.api

    @cached_property
    def model_turns(self) -> list[int]:
        return self.recording.model_turns

    def request(self, turn: int) -> ModelRequest | None:
        record = self.recording.turns.get(turn)
        return record.request if record is not None else None

    def history(self, turn: int) -> list[dict[str, Any]]:
        return self.recording.history(turn)

    def calls(self, call_ids: Collection[str]) -> list[RecordedToolCall]:
        return [call for call in self.recording.tool_calls() if call[1].call_id in call_ids]

    @cached_property
    def _by_key(self) -> dict[CallKey, tuple[ToolStart, ToolEnd]]:
        found: dict[CallKey, tuple[ToolStart, ToolEnd]] = {}
        for _, start, end in self.recording.tool_calls():
            if end is not None and start.arguments is not None:
                found.setdefault(call_key(start.name, start.arguments), (start, end))
        return found

    def recorded_call(self, key: CallKey) -> tuple[ToolStart, ToolEnd] | None:
        return self._by_key.get(key)

    def result_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for _, start, end in self.recording.tool_calls():
            if end is not None:
                counts[start.name] = counts.get(start.name, 0) + 1
        return counts

    def turns_before(self, turn: int, ends: int | None = None) -> tuple[list[PrefixTurn], int]:
        before = [
            PrefixTurn(n, len(node.model_calls), [call.start.name for call in node.tool_calls])
            for n, node in sorted(self.recording.turns.items())
            if n < turn
        ]
        if ends is not None and len(before) > 3 * ends:
            return before[:ends] + before[-ends:], len(before)
        return before, len(before)


def as_parent(run: Recording | ParentRun) -> ParentRun:
    """`run` as a fork reads it: a recording in memory is wrapped."""
    return RecordedParent(run) if isinstance(run, Recording) else run


_Model = TypeVar("_Model", ModelRequest, ModelResponse)

# How many turns' requests a `StoredParent` keeps: a fork asks for its turn's a few times.
_REQUESTS_KEPT = 4


class StoredParent:
    """A `ParentRun` read from the store as the fork asks, a turn or a call at a time;
    `open_store` opens it for each read, so nothing holds it in between (a running fork
    looks up the recorded result of a call it makes again)."""

    def __init__(
        self, open_store: OpenStore, run_id: str, run_start: RunStart, model_turns: list[int]
    ) -> None:
        self._open = open_store
        self.run_id = run_id
        self.run_start = run_start
        self.model_turns = model_turns
        self._requests: OrderedDict[int, ModelRequest | None] = OrderedDict()

    @classmethod
    def load(cls, open_store: OpenStore, run_id: str) -> StoredParent:
        """The run `run_id` (or a unique prefix of it) of the store; `RecordingError` when
        the store does not know it or holds no run_start of it."""
        from traces.store import AmbiguousRunError, UnknownRunError

        with open_store() as store:
            try:
                run_id = store.resolve_run(run_id)
            except (UnknownRunError, AmbiguousRunError) as exc:
                raise RecordingError(str(exc)) from None
            # The first, as a recording's (MCP servers may have framed lines before it).
            starts = store.events(run_id, types=["run_start"], limit=1)
            model_turns = store.turns_with(run_id, ["model_request"])
        start = next((e for e in starts if isinstance(e, RunStart)), None)
        if start is None:
            raise RecordingError(f"run {run_id} has no run_start event in the store")
        return cls(open_store, run_id, start, model_turns)

    @cached_property
    def api(self) -> ModelApi:
        first = self.request(self.model_turns[0]) if self.model_turns else None
        return first.api if first is not None else "chat"

    def request(self, turn: int) -> ModelRequest | None:
        if turn in self._requests:
            self._requests.move_to_end(turn)
            return self._requests[turn]
        found = self._last(turn, "model_request", ModelRequest)
        self._requests[turn] = found
        if len(self._requests) > _REQUESTS_KEPT:
            self._requests.popitem(last=False)
        return found

    def _answer(self, turn: int) -> ModelResponse | None:
        return self._last(turn, "model_response", ModelResponse)

    def _last(self, turn: int, kind: str, cls: type[_Model]) -> _Model | None:
        with self._open() as store:
            found = store.events(self.run_id, types=[kind], turn=turn)
        return next((e for e in reversed(found) if isinstance(e, cls)), None)

    def history(self, turn: int) -> list[dict[str, Any]]:
        return sent_history(turn, self.model_turns, self.request, self._answer)

    def calls(self, call_ids: Collection[str]) -> list[RecordedToolCall]:
        if not call_ids:
            return []
        with self._open() as store:
            events = store.tool_call_events(self.run_id, call_ids)
        # Paired as the whole run's chain pairs them: an id's events are all here.
        return [
            (node.turn, call.start, call.end)
            for node in build_chain(events).turns
            for call in node.tool_calls
        ]

    def recorded_call(self, key: CallKey) -> tuple[ToolStart, ToolEnd] | None:
        name = key[0]
        with self._open() as store:
            made = store.tool_arguments(self.run_id, name)
        for seq, call_id, arguments in made:
            if arguments is None or call_key(name, arguments) != key:
                continue
            for _, start, end in self.calls([call_id]):
                if start.seq == seq and end is not None:
                    return start, end
        return None

    def result_counts(self) -> dict[str, int]:
        with self._open() as store:
            return store.tool_result_counts(self.run_id)

    def turns_before(self, turn: int, ends: int | None = None) -> tuple[list[PrefixTurn], int]:
        with self._open() as store:
            before = [n for n in store.turn_numbers(self.run_id) if n < turn]
            if not before:
                return [], 0
            if ends is not None and len(before) > 3 * ends:
                spans = [(before[0], before[ends - 1]), (before[-ends], before[-1])]
            else:
                spans = [(before[0], before[-1])]
            rows = [row for span in spans for row in store.turn_calls(self.run_id, span)]
        return [PrefixTurn(number, calls, names) for number, calls, names in rows], len(before)


def open_run(ref: str, home: Path, progress: Progress | None = None) -> Recording | ParentRun:
    """A run to read as it is asked, a turn or a call at a time (`workbench fork REF`, the
    tool schemas of `workbench diff --tools`). A trace path or a bundle is read whole: a file
    of its own. A run of the home is read from its store (`StoredParent`, with the home's new
    traces ingested first, as every command does), so that forking the last turn of a run of
    200,000 events reads that turn, never the whole run. When the store cannot be opened
    (another process holds it past the wait, say), the run's trace file is read whole
    instead. `RecordingError` (one line) when there is no such run; `progress` hears how the
    ingest goes."""
    from traces.store import StoreError, TraceStore
    from traces.user_files import names_a_file

    path = Path(ref)
    if path.suffix == ".jsonl" or names_a_file(path):
        return load_recording(path, home)
    try:
        with TraceStore.for_home(existing_home(home)) as store:
            store.ingest_home(home, progress)
    except StoreError:
        return load_recording(ref, home)
    except NoHomeError as exc:
        raise RecordingError(str(exc)) from None
    return StoredParent.load(lambda: TraceStore.for_home(home), ref)
