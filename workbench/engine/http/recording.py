"""Where `workbench proxy` records: a process of its own, beside the one that forwards.

The proxy's handlers send what they see of each exchange, in frames, down a pipe
(workbench.engine.http.channel); this process reads them. It runs at a lower CPU priority
(`nice` +10), so on a busy machine forwarding gets the cores first and recording catches up
after; it sorts the exchanges into runs with a `CaptureBook`
(workbench.engine.http.capture), decodes only the streams' `data:` payloads, and writes the
traces. Exchanges are recorded in the order the handlers saw them: a request after the
exchanges it may continue (those whose answer was over for their client, to its end; the
rest, up to their request), each answer's chunks as they came.

It stops reading while more than MAX_UNRECORDED_BYTES are read but not yet recorded, so
memory stays bounded. It tells the proxy on its stdout, a line a report, which run each
exchange went into, when one is recorded to its end and a trace that could not be written
whole (the messages both ways are typed in workbench.engine.http.recording_messages). It
ends when the pipe does, once it has recorded what it was sent and ended the runs still
open; signals are the proxy's to act on.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import json
import os
import pickle
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, assert_never

from agent_core.wire.codecs import codec_for, holds_last_event
from traces.events import ModelApi
from workbench.engine.http.capture import CaptureBook, Exchange
from workbench.engine.http.channel import FRAME, MAX_UNRECORDED_BYTES
from workbench.engine.http.fleet import Merge
from workbench.engine.http.recording_messages import (
    Arrived,
    Begun,
    Cut,
    Done,
    Message,
    Over,
    Piece,
    Report,
    TraceCut,
    WentUp,
    Whole,
    report_line,
)
from workbench.engine.http.server import fast_json
from workbench.engine.serving import run_loop

# This process's CPU priority below the proxy's.
NICENESS = 10
# How many chunks of one piece are recorded before other exchanges' recording goes on.
CHUNKS_A_TURN = 16


def main(argv: list[str]) -> int:
    """Record what comes down stdin, and down the workers' pipes (their descriptors after
    the first three arguments) when the proxy has workers."""
    home, upstream, anthropic_upstream, *workers = argv
    with contextlib.suppress(OSError, AttributeError):
        os.nice(NICENESS)
    record = _record_merged if workers else _record_all
    run_loop(record(Path(home), upstream, anthropic_upstream or None, [int(w) for w in workers]))
    return 0


def _sorter(home: Path, upstream: str, anthropic_upstream: str | None) -> tuple[_Sorter, _Acks]:
    acks = _Acks(sys.stdout.buffer)
    book = CaptureBook(
        home,
        upstream,
        anthropic_upstream,
        on_cut=lambda run_id, why: acks.tell(TraceCut(run_id, why)),
    )
    return _Sorter(book, acks), acks


async def _record_all(
    home: Path, upstream: str, anthropic_upstream: str | None, workers: list[int]
) -> None:
    sorter, acks = _sorter(home, upstream, anthropic_upstream)
    book = sorter.book
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**31)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    try:
        while True:
            try:
                size = FRAME.unpack(await reader.readexactly(FRAME.size))[0]
                messages: list[Message] = pickle.loads(await reader.readexactly(size))
            except asyncio.IncompleteReadError:
                break
            for message in messages:
                sorter.handle(message)
            await sorter.budget.room()
    finally:
        await sorter.finish()
        book.close()
        acks.flush()


async def _record_merged(
    home: Path, upstream: str, anthropic_upstream: str | None, workers: list[int]
) -> None:
    """The proxy's pipe (stdin) and its workers', merged in the order their messages were
    sent (workbench.engine.http.fleet). Every pipe is read, as far as it goes, before any
    message is handed on: a message sent before another is then never handed on after it."""
    sorter, acks = _sorter(home, upstream, anthropic_upstream)
    loop = asyncio.get_running_loop()
    fds = [sys.stdin.fileno(), *workers]
    merge = Merge(fds)
    buffers = {fd: bytearray() for fd in fds}
    arrived = asyncio.Event()
    for fd in fds:
        os.set_blocking(fd, False)
        loop.add_reader(fd, arrived.set)
    reading = set(fds)
    held_back: set[int] = set()  # ahead of the others by more than the bound
    try:
        while not merge.done:
            await arrived.wait()
            arrived.clear()
            for fd in list(reading):
                if not _read_pipe(fd, buffers[fd], merge):
                    loop.remove_reader(fd)
                    reading.discard(fd)
                    merge.ended(fd)
            for message in merge.release():
                sorter.handle(message)
            for fd in fds:  # a sender far ahead of one held back for waits for it
                over = merge.held(fd) > MAX_UNRECORDED_BYTES
                if fd in reading and over:
                    loop.remove_reader(fd)
                    reading.discard(fd)
                    held_back.add(fd)
                elif fd in held_back and not over:
                    loop.add_reader(fd, arrived.set)
                    reading.add(fd)
                    held_back.discard(fd)
                    arrived.set()
            if sorter.budget.full:
                for fd in reading:
                    loop.remove_reader(fd)
                await sorter.budget.room()
                for fd in reading:
                    loop.add_reader(fd, arrived.set)
                arrived.set()  # what came meanwhile
    finally:
        for fd in reading:
            loop.remove_reader(fd)
        await sorter.finish()
        sorter.book.close()
        acks.flush()


def _read_pipe(fd: int, buffer: bytearray, merge: Merge) -> bool:
    """Read what pipe `fd` holds now, hand its whole frames to `merge`; False at its end."""
    open_ = True
    while open_:
        try:
            data = os.read(fd, 1 << 20)
        except BlockingIOError:
            break
        open_ = bool(data)
        buffer += data
    while len(buffer) >= FRAME.size:
        size = FRAME.unpack_from(buffer)[0]
        if len(buffer) < FRAME.size + size:
            break
        watermark, idle, stamps, messages = pickle.loads(buffer[FRAME.size : FRAME.size + size])
        del buffer[: FRAME.size + size]
        merge.add(fd, watermark, idle, stamps, messages)
    merge.partial(fd, bool(buffer))
    return open_


class _Acks:
    """What the proxy is told, a line per report on this process's stdout: written once a
    turn of the loop, so a backlog of exchanges costs a write, not one each."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._lines: list[str] = []

    def tell(self, report: Report) -> None:
        if not self._lines:
            asyncio.get_running_loop().call_soon(self.flush)
        self._lines.append(report_line(report))

    def flush(self) -> None:
        lines, self._lines = self._lines, []
        if lines:
            with contextlib.suppress(OSError):  # the proxy is gone: nobody to tell
                self._out.write("".join(lines).encode())
                self._out.flush()


class _Budget:
    """Bytes read but not yet recorded, of exchanges whose recording has begun (the others
    wait for messages still to be read, so they must not stop the reading)."""

    def __init__(self) -> None:
        self.size = 0
        self._room = asyncio.Event()
        self._room.set()

    def add(self, amount: int) -> None:
        self.size += amount
        if self.size > MAX_UNRECORDED_BYTES:
            self._room.clear()
        elif self.size <= MAX_UNRECORDED_BYTES // 2:
            self._room.set()

    @property
    def full(self) -> bool:
        return not self._room.is_set()

    async def room(self) -> None:
        await self._room.wait()


class _Sorter:
    """The exchanges being recorded, each in a task of its own, fed by the messages."""

    def __init__(self, book: CaptureBook, acks: _Acks) -> None:
        self.book = book
        self.acks = acks
        self.budget = _Budget()
        self._seen: dict[int, _Seen] = {}
        # What a new exchange waits for before its request is recorded: the exchanges whose
        # answer was over for their client then, to their end, and the last to arrive.
        self._ends = _Ends()
        self._last: _Seen | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def handle(self, message: Message) -> None:
        if isinstance(message, Arrived):
            seen = _Seen(
                message.key,
                message.api,
                _json(message.raw),
                message.headers,
                message.query,
                message.when,
                _Pieces(self.budget),
            )
            # The exchanges before this one that it may continue are recorded first: those
            # whose answer is over for their client, to its end; the rest, up to their
            # request. Requests are recorded in the order they came (each after those
            # before it), so the last one's being recorded stands for all of theirs: a new
            # exchange waits on a few events, not on one for every exchange still streaming.
            last = self._last if self._last is not None and not self._last.begun.is_set() else None
            self._seen[message.key] = self._last = seen
            task = asyncio.create_task(self._record(seen, self._ends.given, last))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        if (found := self._seen.get(message.key)) is None:
            return
        seen = found
        match message:
            case WentUp(when=when):
                if not seen.sent_or_over.is_set():
                    seen.sent = when
                    seen.sent_or_over.set()
            case Piece(when=when, piece=piece):
                seen.tail = _watch_for_done(seen, seen.tail, piece)
                seen.pieces.put(when, piece)
            case Whole(status=status, body=body, when=when):
                seen.status, seen.whole, seen.ended = status, body, when
                seen.answered = True
            case Over(when=when, problem=problem, cut=cut, whole=whole):
                seen.problem, seen.cut = problem, cut
                seen.ended = seen.ended or when
                seen.answered = seen.answered or whole
                seen.over.set()
                seen.sent_or_over.set()
                seen.pieces.end()
                del self._seen[message.key]
            case _:
                assert_never(message)
        if (seen.answered or seen.over.is_set()) and not seen.ending and not seen.settled.is_set():
            seen.ending = self._ends.give()

    async def finish(self) -> None:
        """The pipe ended: an exchange it left open was cut off by the proxy's end."""
        for seen in self._seen.values():
            seen.cut = seen.cut or ("stopped" if not seen.answered else None)
            seen.over.set()
            seen.sent_or_over.set()
            seen.pieces.end()
        self._seen.clear()
        if self._tasks:
            await asyncio.wait(set(self._tasks))

    async def _record(self, seen: _Seen, ended_before: int, last: _Seen | None) -> None:
        """Record one exchange: its request once it has gone upstream, after the exchanges
        it may continue (the `ended_before` first to end for their client, to their end;
        the `last` to arrive before it, up to its request), then its answer as it comes."""
        book = self.book
        try:
            await seen.sent_or_over.wait()
            await self._ends.recorded(ended_before)
            if last is not None:
                await last.begun.wait()
            seen.exchange = book.begin(seen.body, seen.headers, seen.query, seen.sent, seen.api)
            seen.begun.set()
            if seen.exchange is not None:
                self.acks.tell(Begun(seen.key, seen.exchange.run.run_id))
            seen.pieces.counted()
            await _record_answer(seen, self._settle)
        except Exception as exc:  # one exchange's failure must not end the others'
            book.report(f"could not record an exchange: {type(exc).__name__}: {exc}")
        finally:
            seen.pieces.stop()
            seen.begun.set()
            self._settle(seen)
            self.acks.tell(Done(seen.key))

    def _settle(self, seen: _Seen) -> None:
        """The exchange is recorded to its end (or never will be)."""
        if not seen.settled.is_set():
            seen.settled.set()
            if seen.ending:
                self._ends.done(seen.ending)


class _Ends:
    """The exchanges whose answer is over for their client, numbered in the order they got
    so (from 1), and which of them are recorded to their end: `recorded(n)` returns once
    the first n all are. The numbers still open, in order, and a heap of the waiters (who
    start waiting in any order), so that each exchange costs a few steps however many are
    being recorded (a list of every exchange in flight, made for each new one, grew with
    the backlog: quadratic)."""

    def __init__(self) -> None:
        self.given = 0
        self._open: deque[int] = deque()
        self._done: set[int] = set()  # numbers recorded to their end, still in `_open`
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._waiting = 0  # tie-break between waiters on one number

    def give(self) -> int:
        self.given += 1
        self._open.append(self.given)
        return self.given

    def done(self, number: int) -> None:
        self._done.add(number)
        while self._open and self._open[0] in self._done:
            self._done.discard(self._open.popleft())
        low = self._low()
        while self._waiters and self._waiters[0][0] < low:
            future = heapq.heappop(self._waiters)[2]
            if not future.done():
                future.set_result(None)

    def _low(self) -> int:
        """The first number not yet recorded to its end."""
        return self._open[0] if self._open else self.given + 1

    async def recorded(self, count: int) -> None:
        if count < self._low():
            return
        future = asyncio.get_running_loop().create_future()
        self._waiting += 1
        heapq.heappush(self._waiters, (count, self._waiting, future))
        await future


class _Pieces:
    """A stream's pieces on their way to its recording, each with its arrival time
    (`time.monotonic()` of the proxy), then an end."""

    def __init__(self, budget: _Budget) -> None:
        self._items: deque[tuple[float, bytes] | None] = deque()
        self._size = 0
        self._ready = asyncio.Event()
        self._budget = budget
        self._counted = False
        self._stopped = False

    def put(self, arrived: float, piece: bytes) -> None:
        if self._stopped:
            return
        self._items.append((arrived, piece))
        self._size += len(piece)
        if self._counted:
            self._budget.add(len(piece))
        self._ready.set()

    def counted(self) -> None:
        """Its recording has begun: what waits here now counts against the budget."""
        if not self._counted:
            self._counted = True
            self._budget.add(self._size)

    def end(self) -> None:
        self._items.append(None)
        self._ready.set()

    async def take(self) -> tuple[float, bytes] | None:
        """The next piece, or None at the end."""
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        item = self._items.popleft()
        if item is not None:
            self._size -= len(item[1])
            if self._counted:
                self._budget.add(-len(item[1]))
        return item

    def stop(self) -> None:
        """Nothing more is recorded: drop what waits."""
        if self._counted:
            self._budget.add(-self._size)
        self._stopped = True
        self._items.clear()
        self._size = 0


@dataclass(eq=False)
class _Seen:
    """What the proxy saw of one exchange, with `time.monotonic()` times, for recording."""

    key: int  # the proxy's name for it
    api: ModelApi
    body: dict[str, Any]
    headers: dict[str, str]
    query: str
    sent: float
    pieces: _Pieces
    status: int | None = None
    whole: bytes | None = None  # a non-streamed answer (or an error's body)
    ended: float = 0.0
    problem: str | None = None  # the upstream could not be reached or broke off
    cut: Cut | None = None
    answered: bool = False  # the client has (or is being sent) the whole answer
    tail: bytes = b""  # the end of the last piece, where the last event may begin
    # The request was sent, or the handler is done.
    sent_or_over: asyncio.Event = field(default_factory=asyncio.Event)
    over: asyncio.Event = field(default_factory=asyncio.Event)  # the handler is done
    begun: asyncio.Event = field(default_factory=asyncio.Event)  # the request is recorded
    settled: asyncio.Event = field(default_factory=asyncio.Event)  # and its answer's end
    exchange: Exchange | None = None
    ending: int = 0  # its number among those whose answer got over for their client


def _watch_for_done(seen: _Seen, tail: bytes, piece: bytes) -> bytes:
    """Mark the answer over when `piece` brings the stream's last event — `data: [DONE]`,
    or the format's last event — (which may start in the piece before it, whose end is
    `tail`); returns the new tail."""
    if not seen.answered:
        codec = codec_for(seen.api)  # `data: [DONE]`, or the format's last event
        seen.answered = holds_last_event(codec, piece) or holds_last_event(codec, tail + piece[:32])
    return (tail + piece[-32:])[-32:]


async def _record_answer(seen: _Seen, settle: Callable[[_Seen], None]) -> None:
    """Record the answer's pieces as they come. A stream is whole at `[DONE]` or the
    format's last event: recorded then, whatever the upstream does after it. Without
    either, its end decides."""
    exchange = seen.exchange
    decoder = SseDecoder()
    unyielded = 0  # chunks recorded since other exchanges' recording last went on
    while (item := await seen.pieces.take()) is not None:
        if exchange is None or decoder.done or exchange.closed:
            continue  # what comes after the last event reached the client; it was whole
        arrived, piece = item
        for data in decoder.feed(piece):
            exchange.chunk(data, arrived)
            # Other exchanges' requests and chunks go first, a few chunks' recording at
            # most (a piece can hold a whole answer; a turn of the loop for each chunk
            # cost more than its recording).
            unyielded += 1
            if unyielded == CHUNKS_A_TURN:
                unyielded = 0
                await asyncio.sleep(0)
            if exchange.assembler.done:
                break
        if decoder.done or exchange.assembler.done:
            exchange.finish(arrived)
            settle(seen)
    if exchange is None or decoder.done or exchange.closed:
        return
    if seen.whole is not None and seen.status is not None:
        if seen.status >= 400:
            exchange.failed(seen.status, _error_text(seen.status, seen.whole), seen.ended)
        else:
            exchange.completion(seen.whole, seen.ended)
    elif seen.problem is not None:
        exchange.failed(502, seen.problem, seen.ended, "connection")
    elif seen.cut is None or exchange.saw_finish:
        exchange.finish(seen.ended)  # the stream ended, or a chunk said the answer had
    elif seen.cut == "hung_up":
        exchange.abandoned()


class SseDecoder:
    """Turns the bytes of a server-sent-event stream into the JSON payloads of its `data:`
    events, as they complete, up to `data: [DONE]` (then `done`; nothing after it is
    decoded). Comments, other fields and other non-JSON data are passed over; they reached
    the client all the same."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []  # the line begun, in pieces (a line can be long)
        self._data: list[bytes] = []
        self.done = False

    def feed(self, piece: bytes) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        if self.done:
            return found
        if b"\n" not in piece:
            self._parts.append(piece)
            return found
        if self._parts:
            piece, self._parts = b"".join([*self._parts, piece]), []
        *lines, rest = piece.split(b"\n")
        if rest:
            self._parts.append(rest)
        for line in lines:
            line = line.rstrip(b"\r")
            if not line:
                self._dispatch(found)
            elif line.startswith(b"data:"):
                value = line[5:]
                value = value[1:] if value.startswith(b" ") else value
                if value == b"[DONE]" and not self._data:
                    # The answer is whole: no blank line needs to follow.
                    self.done, self._parts = True, []
                    break
                self._data.append(value)
        return found

    def _dispatch(self, found: list[dict[str, Any]]) -> None:
        if not self._data:
            return
        text, self._data = b"\n".join(self._data), []
        try:
            value = _json(text)
        except ValueError:
            return
        if isinstance(value, dict):
            found.append(value)


def _json(raw: bytes) -> Any:
    """A request body or an event's data, read fast (as `json` reads it)."""
    fast = fast_json(raw)
    return fast if fast is not None else json.loads(raw)


def _error_text(status: int, body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
        message = data["error"]["message"] if isinstance(data.get("error"), dict) else None
    except (ValueError, AttributeError, KeyError, TypeError):
        message = None
    return f"HTTP {status}: {message or text[:500] or 'no body'}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
