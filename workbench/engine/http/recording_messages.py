"""What the proxy and its recording process tell each other, one small type per message.

Down the pipe (workbench.engine.http.channel sends, workbench.engine.http.recording reads),
pickled a frame at a time: what a handler saw of an exchange, in the order it happened,
each message naming the exchange by the proxy's key for it, with `time.monotonic()` times
of the proxy. Back, a line each on the recording process's stdout: which run an exchange
went into, when it is recorded to its end, and a trace that could not be written whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, assert_never

from traces.events import ModelApi

# Why a handler ended before its answer was whole: the client hung up, or the proxy stopped.
Cut = Literal["hung_up", "stopped"]
# A message pickled as its class and its fields' values, in a frame of thousands: the way
# pickle has for a frozen dataclass with slots (its state set field by field through
# `__setstate__`) cost a few times as much, per message, on both sides of the pipe.
_Reduced = tuple[type, tuple[object, ...]]


@dataclass(frozen=True, slots=True)
class Arrived:
    """A model call's request arrived: its body `raw` (a JSON object) in wire format `api`,
    headers with lower-case names, and query string."""

    key: int
    api: ModelApi
    raw: bytes
    headers: dict[str, str]
    query: str
    when: float

    def __reduce__(self) -> _Reduced:
        return Arrived, (self.key, self.api, self.raw, self.headers, self.query, self.when)


@dataclass(frozen=True, slots=True)
class WentUp:
    """The request went upstream."""

    key: int
    when: float

    def __reduce__(self) -> _Reduced:
        return WentUp, (self.key, self.when)


@dataclass(frozen=True, slots=True)
class Piece:
    """A piece of a streamed answer, as it arrived (before the client got it)."""

    key: int
    when: float
    piece: bytes

    def __reduce__(self) -> _Reduced:
        return Piece, (self.key, self.when, self.piece)


@dataclass(frozen=True, slots=True)
class Whole:
    """A whole (non-streamed) answer or an error's body, with its status."""

    key: int
    status: int
    body: bytes
    when: float

    def __reduce__(self) -> _Reduced:
        return Whole, (self.key, self.status, self.body, self.when)


@dataclass(frozen=True, slots=True)
class Over:
    """The handler is done: the upstream could not be reached or broke off (`problem`),
    the client hung up or the proxy stopped (`cut`), or every piece reached the client
    (`whole`)."""

    key: int
    when: float
    problem: str | None
    cut: Cut | None
    whole: bool

    def __reduce__(self) -> _Reduced:
        return Over, (self.key, self.when, self.problem, self.cut, self.whole)


Message = Arrived | WentUp | Piece | Whole | Over


@dataclass(frozen=True, slots=True)
class Begun:
    """The exchange's request is recorded, in run `run_id`."""

    key: int
    run_id: str


@dataclass(frozen=True, slots=True)
class Done:
    """The exchange is recorded to its end (or never will be)."""

    key: int


@dataclass(frozen=True, slots=True)
class TraceCut:
    """The trace of run `run_id` could not be written whole (`why`: a full disk, say)."""

    run_id: str
    why: str


Report = Begun | Done | TraceCut


def report_line(report: Report) -> str:
    """The line that tells the proxy `report` (words, the last of which may hold spaces;
    no line breaks)."""
    match report:
        case Begun(key, run_id):
            words = ["begun", str(key), run_id]
        case Done(key):
            words = ["done", str(key)]
        case TraceCut(run_id, why):
            words = ["cut", run_id, why]
        case _:
            assert_never(report)
    return " ".join(" ".join(word.split()) for word in words) + "\n"


def read_report(line: str) -> Report | None:
    """What a line of `report_line` said; None for a line it does not write."""
    kind, _, rest = line.rstrip("\n").partition(" ")
    first, _, last = rest.partition(" ")
    if kind == "begun" and first.isdigit() and last:
        return Begun(int(first), last)
    if kind == "done" and rest.isdigit():
        return Done(int(rest))
    if kind == "cut" and first:
        return TraceCut(first, last)
    return None
