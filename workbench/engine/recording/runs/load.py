"""Load a recorded run for the engine and index it by turn.

A run is named by a trace file path or by a run id (or unique prefix) known to the store
of the home folder. The events come from the JSONL file itself, read by `traces.reader`,
so replay sees exactly what was written. Anything that makes a recording unusable is a
`RecordingError` with one line saying why and what to do.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agent_core.agent import AgentConfig
from agent_core.wire import responses
from agent_core.wire.codecs import codec_for
from traces.events import (
    SCHEMA_VERSION,
    Event,
    ModelApi,
    ModelRequest,
    ModelResponse,
    RunEnd,
    RunStart,
    ToolEnd,
    ToolStart,
)
from traces.home import ambiguous_run, existing_home, traces_dir
from traces.run_names import is_safe_run_id
from traces.tree import TurnNode, build_chain


class RecordingError(Exception):
    """The run cannot be used: unknown, newer schema, corrupt or empty. One line."""


class TraceGone(RecordingError):
    """A run the home's store holds whose trace file is gone (removed, or ingested from
    elsewhere): what reads the store instead (`replay.stored`) reads `run_id` there."""

    def __init__(self, run_id: str, path: Path) -> None:
        super().__init__(f"no trace file at {path}")
        self.run_id = run_id


@dataclass
class Recording:
    run_id: str
    events: list[Event]
    run_start: RunStart
    run_end: RunEnd | None
    turns: dict[int, TurnNode]  # by number: what each turn recorded (`traces.tree`)
    path: Path | None = None
    problems: list[str] = field(default_factory=list)
    written_in: int = SCHEMA_VERSION  # the trace schema version its file was written in

    @property
    def complete(self) -> bool:
        return self.run_end is not None

    @property
    def model_turns(self) -> list[int]:
        """Turns in which a request reached the model, in order."""
        return [n for n, record in self.turns.items() if record.requests]

    def turn(self, number: int) -> TurnNode | None:
        return self.turns.get(number)

    def history(self, turn: int) -> list[dict[str, Any]]:
        """The whole conversation turn `turn` sent (`sent_history`)."""
        return sent_history(turn, self.model_turns, self._request, self._answer)

    def _request(self, turn: int) -> ModelRequest | None:
        record = self.turns.get(turn)
        return record.request if record is not None else None

    def _answer(self, turn: int) -> ModelResponse | None:
        record = self.turns.get(turn)
        return record.response if record is not None else None

    @property
    def api(self) -> ModelApi:
        """The wire format the run's model calls used (its first one's; chat when none)."""
        for record in self.turns.values():
            if record.request is not None:
                return record.request.api
        return "chat"

    def tool_calls(self) -> Iterator[tuple[int, ToolStart, ToolEnd | None]]:
        for number, record in self.turns.items():
            for call in record.tool_calls:
                yield number, call.start, call.end

    @property
    def stop_point(self) -> str | None:
        """Where an unfinished recording stops, for messages; None when it has run_end."""
        if self.run_end is not None:
            return None
        if not self.turns:
            return "before its first turn"
        last = max(self.turns)
        state = "complete" if self.turns[last].complete else "incomplete"
        return f"inside turn {last} ({state} turn, no run_end)"


def sent_history(
    turn: int,
    model_turns: Sequence[int],
    request: Callable[[int], ModelRequest | None],
    answer: Callable[[int], ModelResponse | None],
) -> list[dict[str, Any]]:
    """The whole conversation turn `turn` sent (empty when it made no model call), from a
    run's `model_turns` and its `request` and `answer` at a turn (each turn's last).

    A Responses request that sent only what followed the answer it named
    (`previous_response_id`) and was recorded so (traces before the proxy kept the whole
    conversation) is rebuilt from the turns before it: the earliest one recorded whole, then
    each answer and what followed it."""
    sent = request(turn)
    if sent is None:
        return []
    # (the answer before, the messages that followed it), from the latest turn back
    continuations: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    while True:
        messages = [dict(message) for message in sent.messages]
        body = sent.body
        codec = codec_for(sent.api)
        if not body or codec.previous_answer_id(body) is None:
            break
        if messages != codec.request_parts(body)[0]:
            break  # recorded whole
        earlier = bisect_left(model_turns, turn)
        answered = answer(model_turns[earlier - 1]) if earlier else None
        before = request(model_turns[earlier - 1]) if answered is not None else None
        if answered is None or before is None:
            break
        continuations.append((answered.message, messages))
        turn, sent = model_turns[earlier - 1], before
    for message, following in reversed(continuations):
        messages = responses.continued([*messages, message], following)
    return messages


def index_events(events: list[Event], *, path: Path | None = None) -> Recording:
    """Index a run's events by turn (`traces.tree` groups them); `RecordingError` when there
    is no run_start."""
    # MCP servers start (and their handshake frames are traced) before run_start.
    run_start = next((e for e in events if isinstance(e, RunStart)), None)
    if run_start is None:
        where = f" in {path}" if path else ""
        raise RecordingError(f"no run_start event{where}; this is not a complete trace header")
    turns = {node.turn: node for node in build_chain(events).turns}
    run_end = next((e for e in reversed(events) if isinstance(e, RunEnd)), None)
    return Recording(run_start.run_id, events, run_start, run_end, turns, path)


def config_from_run_start(
    start: RunStart, request: ModelRequest | None, **changes: Any
) -> AgentConfig:
    """The configuration a recorded run ran with, as its `run_start` and a request of it
    (for streaming) say, with `changes` applied. Replay re-runs it as it was; a fork changes
    the history, the numbering and what the fork records about its parent."""
    config = AgentConfig(
        task=start.task,
        system_prompt=start.system_prompt,
        limits=start.limits,
        params=dict(start.params),
        stream=request.stream if request is not None else True,
        offer_reasoning=bool(start.meta.get("offer_reasoning", False)),
        parent_run_id=start.parent_run_id,
        fork_turn=start.fork_turn,
        edits=list(start.edits),
        meta=dict(start.meta),
        origin=start.origin,
    )
    return replace(config, **changes)


def read_recording_file(
    path: Path | str, progress: Callable[[int], object] | None = None
) -> Recording:
    """Read one trace file; a bad line before the last one makes it corrupt. `progress`
    hears how many of its bytes were read, line by line."""
    from traces.reader import read_trace
    from traces.user_files import names_a_file
    from traces.versions import NewerSchemaError

    path = Path(path)
    if not names_a_file(path):
        raise RecordingError(f"no trace file at {path}")
    try:
        result = read_trace(path, progress)
    except NewerSchemaError as exc:
        raise RecordingError(f"{path.name}: {exc}; upgrade the workbench to replay it") from exc
    except (OSError, ValueError) as exc:
        raise RecordingError(f"cannot read {path}: {exc}") from exc
    problems = [str(problem) for problem in result.problems]
    events = list(result.events)
    check_damage(result.problems, _line_count(path), path)
    for _ in in_sequence(events, path):
        pass
    recording = index_events(events, path=path)
    recording.problems = problems
    recording.written_in = result.schema_version
    return recording


def _line_count(path: Path) -> int:
    from traces.user_files import open_regular

    with open_regular(path) as handle:
        data = handle.read()
    count = data.count(b"\n")
    return count + (0 if data.endswith(b"\n") or not data else 1)


def check_damage(problems: Iterable[object], last_line: int, path: Path) -> None:
    """`RecordingError` for a bad line of the trace at `path` (its `problems`, as the reader
    reports them) before its last line: a killed run may leave a half-written last line;
    anything else is damage."""
    for problem in problems:
        line = getattr(problem, "line", None)
        if line is None or line < last_line:
            raise RecordingError(f"corrupt recording {path}: {problem}")


def checked_events(path: Path) -> Iterator[Event]:
    """The events of the trace at `path`, one at a time, checked as `read_recording_file`
    checks a trace (a bad line before the last one, a seq out of order, a newer schema:
    `RecordingError`) without ever holding it."""
    from traces.reader import iter_trace

    problems: list[str] = []
    with reading_trace(path, problems):
        for event in in_sequence(iter_trace(path, problems), path):
            check_damage(problems, 0, path)  # the reader leaves out a cut-off last line
            yield event
    check_damage(problems, 0, path)


@contextmanager
def reading_trace(path: Path, problems: list[str]) -> Iterator[None]:
    """What reading the trace at `path` raises, as a `RecordingError` of one line; a bad
    line the reader found (`problems`) before the one that stopped it says more."""
    from traces.versions import NewerSchemaError

    try:
        yield
    except RecordingError:
        check_damage(problems, 0, path)
        raise
    except NewerSchemaError as exc:
        raise RecordingError(f"{path.name}: {exc}; upgrade the workbench to replay it") from exc
    except (OSError, ValueError) as exc:
        raise RecordingError(f"cannot read {path}: {exc}") from exc


def in_sequence(events: Iterable[Event], path: Path) -> Iterator[Event]:
    """`events` as they come, checked to be one run's, numbered 0, 1, 2, …: `RecordingError`
    at the first that is not, or when there are none."""
    run_id: str | None = None
    for expected, event in enumerate(events):
        if run_id is None:
            run_id = event.run_id
        if event.run_id != run_id:
            raise RecordingError(
                f"corrupt recording {path}: seq {event.seq} belongs to run {event.run_id}"
            )
        if event.seq != expected:
            raise RecordingError(
                f"corrupt recording {path}: expected seq {expected}, found {event.seq}"
            )
        yield event
    if run_id is None:
        raise RecordingError(f"corrupt recording {path}: no events")


def load_recording(ref: str | Path, home: Path) -> Recording:
    """A run by trace path, or by run id / unique prefix from the home folder's store."""
    return read_recording_file(trace_path(ref, home))


def trace_path(ref: str | Path, home: Path) -> Path:
    """The trace file of a run named by its path, or by run id / unique prefix (the home's
    traces folder, else the file the home's store ingested it from); `RecordingError`."""
    from traces.user_files import names_a_file

    path = Path(ref)
    if path.suffix == ".jsonl" or names_a_file(path):
        return path
    # Only a ref that can be a file name is looked for as one: '*', '/' or '..' in it would
    # make a pattern or a path of it. The store matches any text as a plain prefix.
    if is_safe_run_id(str(ref)):
        folder = traces_dir(home)
        direct = folder / f"{ref}.jsonl"
        if direct.is_file():
            return direct
        matches = sorted(folder.glob(f"{ref}*.jsonl")) if folder.is_dir() else []
        if len(matches) > 1:
            raise RecordingError(ambiguous_run(str(ref), [path.stem for path in matches]))
        if len(matches) == 1:
            return matches[0]
    return _path_from_store(str(ref), home)


def _path_from_store(prefix: str, home: Path) -> Path:
    """The trace file of a run the store knows (it may have been ingested from elsewhere);
    `TraceGone` when it has none any more."""
    unknown = f"unknown run {prefix!r}; `workbench runs` lists the recorded runs"
    try:
        from traces.store import TraceStore
    except ImportError:
        raise RecordingError(unknown) from None
    try:
        with TraceStore.for_home(existing_home(home)) as store:
            store.ingest_home(home)
            run_id = store.resolve_run(prefix)
            source = getattr(store.run(run_id), "source_path", None)
    except Exception as exc:  # unknown or ambiguous id, locked or damaged store: one line
        message = str(exc).splitlines()[0] if str(exc) else unknown
        raise RecordingError(message) from None
    if source and Path(source).is_file():
        return Path(source)
    if not is_safe_run_id(run_id):  # never a path made of an id read from a file
        raise RecordingError(f"the trace file of run {run_id!r} is gone ({source})")
    path = traces_dir(home) / f"{run_id}.jsonl"
    if not path.is_file():
        raise TraceGone(run_id, path)
    return path


def run_name(run_start: RunStart) -> str | None:
    """A run's name: what a captured run's `X-Workbench-Run` header said (`meta.name`)."""
    name = run_start.meta.get("name")
    return name if isinstance(name, str) else None


def traces_named(name: str, home: Path) -> list[Path]:
    """The trace of every run of the home folder named `name`; RecordingError if none."""
    import json

    from traces.user_files import open_regular

    found: list[Path] = []
    folder = traces_dir(home)
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        try:
            with open_regular(path) as handle:
                first = json.loads(handle.readline())
        except (OSError, ValueError):
            continue  # not a trace header; `workbench ingest` reports damaged files
        meta = first.get("meta") if isinstance(first, dict) else None
        if first.get("type") == "run_start" and isinstance(meta, dict) and meta.get("name") == name:
            found.append(path)
    if not found:
        raise RecordingError(f"no run named {name!r} in {folder}")
    return found
