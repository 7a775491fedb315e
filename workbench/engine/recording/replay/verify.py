"""Offline replay: re-drive the real agent loop from a recording and compare, event by event.

    recording = load_recording("3fa2", home)
    async for item in replay_stream(recording, pace="original"):
        ...  # ReplayStep per matched event, TextDelta as it streams, ReplayOutcome last
    outcome = await replay_run(recording)          # the same, without the steps

The loop is the real `Agent`; only its model (`ReplayModel`) and tools (`ReplayToolset`)
answer from the recording. No network, no tool runs. Identical events (except timings and
ids, see `compare.IGNORED_FIELDS`) mean the decision chain replays exactly; otherwise the
replay stops at the first divergence with a field-level diff.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_core.agent import Agent, AgentConfig, TextDelta
from traces.events import SCHEMA_VERSION, Error, Event, EventBase, ModelRequest, RunEnd
from traces.writer import Sink
from workbench.engine.recording.replay.field_diff import (
    FieldDiff,
    diff_events,
    is_transport_only,
)
from workbench.engine.recording.replay.model import ReplayModel, ReplayToolset
from workbench.engine.recording.replay.streamed import RecordedSource, ReplaySource
from workbench.engine.recording.runs.load import Recording, config_from_run_start

Pace = Literal["fast", "original"]
ReplayStatus = Literal["identical", "diverged", "incomplete"]


class NotReplayable(Exception):
    """The run's decisions were not made by the workbench agent, so replay has none to re-drive."""


def check_replayable(recording: Recording | ReplaySource) -> None:
    """Raise `NotReplayable` (one line: why, and what to do instead) for runs replay cannot verify.

    A captured or imported run records what another client's agent decided; replaying it
    with the workbench agent would report a divergence that says nothing about the run.
    """
    start = recording.run_start
    short = recording.run_id[:12]
    if start.origin == "captured":
        raise NotReplayable(
            f"run {short} was captured from {start.client or 'a client'}; replay it offline "
            f"by pointing that client at `workbench serve-model --replay {short}`"
        )
    if start.origin == "imported":
        raise NotReplayable(
            f"run {short} was imported from {start.client or 'another tool'}; its decisions "
            "were made there, not by the workbench agent, so replay cannot verify it"
        )


@dataclass(frozen=True)
class ReplayStep:
    """One replayed event that matched its recorded counterpart."""

    position: int  # 0-based among compared events
    total: int  # how many recorded events will be compared
    recorded: Event
    replayed: Event


@dataclass(frozen=True)
class Divergence:
    turn: int | None
    event_type: str
    recorded_seq: int | None
    reason: str
    diffs: list[FieldDiff] = field(default_factory=list)
    recorded: Event | None = None
    replayed: Event | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "event_type": self.event_type,
            "recorded_seq": self.recorded_seq,
            "reason": self.reason,
            "diffs": [d.to_json() for d in self.diffs],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Divergence:
        """The divergence `to_json` wrote, without the two events themselves."""
        return cls(
            turn=data.get("turn"),
            event_type=str(data["event_type"]),
            recorded_seq=data.get("recorded_seq"),
            reason=str(data["reason"]),
            diffs=[FieldDiff.from_json(diff) for diff in data.get("diffs", [])],
        )


@dataclass(frozen=True)
class ReplayOutcome:
    run_id: str
    status: ReplayStatus
    events_compared: int
    events_recorded: int
    turns_replayed: int
    wall_s: float
    divergence: Divergence | None = None
    note: str = ""  # why the replay stopped short, for incomplete recordings

    @property
    def exit_code(self) -> int:
        return {"identical": 0, "diverged": 1, "incomplete": 2}[self.status]

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "events_compared": self.events_compared,
            "events_recorded": self.events_recorded,
            "turns_replayed": self.turns_replayed,
            "wall_s": round(self.wall_s, 4),
            "divergence": self.divergence.to_json() if self.divergence else None,
            "note": self.note,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReplayOutcome:
        """The outcome `to_json` wrote (in another process: `replay_process`)."""
        divergence = data.get("divergence")
        return cls(
            run_id=str(data["run_id"]),
            status=data["status"],
            events_compared=int(data["events_compared"]),
            events_recorded=int(data["events_recorded"]),
            turns_replayed=int(data["turns_replayed"]),
            wall_s=float(data["wall_s"]),
            divergence=Divergence.from_json(divergence) if divergence else None,
            note=str(data.get("note", "")),
        )


ReplayItem = ReplayStep | TextDelta | ReplayOutcome


def replay_config(recording: ReplaySource) -> AgentConfig:
    """The run's configuration as recorded, so the replayed run_start matches the original."""
    start = recording.run_start
    first_turn = min(recording.model_turns, default=1)
    first = recording.first_request
    if start.fork_turn is not None and first is not None:
        # A fork began from a rebuilt history; its first request is that history.
        return config_from_run_start(
            start, first, initial_messages=_history_before(first), start_turn=first_turn
        )
    return config_from_run_start(start, first)


def _history_before(request: ModelRequest) -> list[dict[str, Any]]:
    return [dict(message) for message in request.messages]


async def replay_stream(
    recording: Recording | ReplaySource,
    *,
    pace: Pace = "fast",
    speed: float = 1.0,
    sinks: list[Sink] | None = None,
) -> AsyncIterator[ReplayItem]:
    """Replay `recording`, yielding each matched step; the last item is the outcome.

    The recorded events are read in step with the replayed ones (a trace file streamed:
    `streamed.streamed_source`). Raises `NotReplayable` for a run the workbench agent did
    not drive (`check_replayable`).
    """
    if isinstance(recording, Recording):
        recording = RecordedSource(recording)
    check_replayable(recording)
    started = time.perf_counter()
    recorded = recording.recorded_events()
    total = recording.recorded_count
    estimates = recording.written_in == SCHEMA_VERSION and not recording.redacted
    model = ReplayModel(recording)
    toolset = ReplayToolset(recording, model)
    agent = Agent(model, [toolset], replay_config(recording), sinks=sinks)
    toolset.recorder = agent.recorder  # its turn says which recorded tool changes apply
    origin = recording.origin
    position = 0
    expected: Event | None = None  # the recorded event at `position`, once read
    divergence: Divergence | None = None
    note = ""
    stream = agent.run_stream()
    try:
        async for item in stream:
            if isinstance(item, TextDelta):
                yield item
                continue
            if not isinstance(item, EventBase) or is_transport_only(item):
                continue
            if position >= total:
                if recording.complete:
                    divergence = _extra_event(item, model)
                else:
                    note = f"the recording stops {recording.stop_point}; replayed up to there"
                break
            expected = next(recorded)
            divergence = _compare(expected, item, model, estimates)
            if divergence is not None:
                stop = _stopped_by_clock(expected)
                if stop is not None:
                    # Wall-clock endings cannot recur in a replay that takes no time.
                    divergence = None
                    note = f"the recorded run was stopped by {stop} here; replayed up to it"
                break
            if pace == "original":
                await _wait_until(started, (expected.ts - origin).total_seconds() / speed)
            yield ReplayStep(position, total, expected, item)
            position += 1
            expected = None
    finally:
        # Stop the loop where the comparison stopped (run_stream is an async generator).
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
    if divergence is None and not note and position < total:
        divergence = _missing_event(expected or next(recorded), model)
    if divergence is None and not note and not recording.complete:
        note = f"the recording stops {recording.stop_point}; replayed up to there"
    status: ReplayStatus = "identical"
    if divergence is not None:
        status = "diverged"
    elif not recording.complete:
        status = "incomplete"
    yield ReplayOutcome(
        run_id=recording.run_id,
        status=status,
        events_compared=position,
        events_recorded=total,
        turns_replayed=model.calls_served,
        wall_s=time.perf_counter() - started,
        divergence=divergence,
        note=note,
    )


async def replay_run(
    recording: Recording | ReplaySource,
    *,
    pace: Pace = "fast",
    speed: float = 1.0,
    on_step: Callable[[ReplayStep], None] | None = None,
    sinks: list[Sink] | None = None,
) -> ReplayOutcome:
    """Replay to the end or the first divergence; `on_step` sees each matched event."""
    async for item in replay_stream(recording, pace=pace, speed=speed, sinks=sinks):
        if isinstance(item, ReplayOutcome):
            return item
        if isinstance(item, ReplayStep) and on_step is not None:
            on_step(item)
    raise AssertionError("replay_stream always ends with an outcome")


def _compare(
    expected: Event, actual: Event, model: ReplayModel, estimates: bool
) -> Divergence | None:
    if expected.type != actual.type:
        return Divergence(
            turn=expected.turn,
            event_type=expected.type,
            recorded_seq=expected.seq,
            reason=f"the replay emitted {actual.type} where the recording has {expected.type}",
            diffs=[FieldDiff("type", expected.type, actual.type), *_request_diffs(model)],
            recorded=expected,
            replayed=actual,
        )
    diffs = diff_events(expected, actual, estimates=estimates)
    if not diffs:
        return None
    return Divergence(
        turn=expected.turn,
        event_type=expected.type,
        recorded_seq=expected.seq,
        reason=f"{expected.type} differs in {len(diffs)} field(s)",
        diffs=diffs,
        recorded=expected,
        replayed=actual,
    )


def _stopped_by_clock(expected: Event) -> str | None:
    """What stopped the recorded run at `expected`, if it was the clock or the user."""
    if isinstance(expected, Error) and expected.kind == "timeout" and expected.where == "run":
        return "the run's time limit"
    if isinstance(expected, RunEnd):
        if expected.status == "cancelled":
            return "cancellation"
        if expected.timeout_layer == "run":
            return "the run's time limit"
    return None


def _request_diffs(model: ReplayModel) -> list[FieldDiff]:
    return list(model.mismatch.diffs) if model.mismatch is not None else []


def _extra_event(actual: Event, model: ReplayModel) -> Divergence:
    return Divergence(
        turn=actual.turn,
        event_type=actual.type,
        recorded_seq=None,
        reason=f"the replay went on with {actual.type} after the recording ended",
        diffs=_request_diffs(model),
        replayed=actual,
    )


def _missing_event(expected: Event, model: ReplayModel) -> Divergence:
    return Divergence(
        turn=expected.turn,
        event_type=expected.type,
        recorded_seq=expected.seq,
        reason=f"the replay ended before the recorded {expected.type}",
        diffs=_request_diffs(model),
        recorded=expected,
    )


async def _wait_until(started: float, offset_s: float) -> None:
    delay = started + offset_s - time.perf_counter()
    if delay > 0:
        await asyncio.sleep(delay)
