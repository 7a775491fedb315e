"""The proxy's side of recording: what its handlers see, sent to the recording process.

What a handler sees of an exchange — its request when it arrives, when it went upstream,
each stream piece with its arrival time, a whole answer, how it ended — goes as a message
(one type each, workbench.engine.http.recording_messages), in the order it happened, to the
`RecordingChannel`, which sends the messages of every 20 ms (or 1 MiB of bodies) as one
frame down a pipe to the recording process (workbench.engine.http.recording). Memory stays
bounded: the proxy's handlers wait (the only time a chunk waits for recording) when more
than MAX_UNRECORDED_BYTES sit in the pipe unread.

The recording process tells the proxy, a line at a time on its stdout, which run each
exchange went into and when it is recorded to its end, so the proxy knows what is still
queued: it says once when recording falls LAG_WARNING_S behind, and what a stop waits for.
That process runs in a session of its own, so a terminal's Ctrl-C (SIGINT to the proxy's
process group) never reaches it, and it ignores SIGINT and SIGTERM from its first line on:
stopping is the proxy's decision. The proxy stops it by closing the pipe and waits until
everything sent is recorded, saying so when exchanges are still queued; told to hurry (a
second Ctrl-C), it kills it and says how many exchanges, of which runs, were not recorded.
A run whose trace could not be written whole (a full disk) is said once, named, and every
such run is named again at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import struct
import sys
import time
from pathlib import Path
from typing import assert_never

from traces.events import ModelApi
from workbench.engine.http import recording_messages as msg
from workbench.engine.http.fleet import QUIET_FRAMES, Workers
from workbench.engine.serving import finish_or_hurry

# How many bytes may wait to be recorded (in the pipe, and read but not yet recorded)
# before the side that sends them waits.
MAX_UNRECORDED_BYTES = 4 * 1024 * 1024
FRAME = struct.Struct("<I")
# How long messages wait to be sent as one frame (so the recording process is woken after
# the forwarding they belong to, not in the middle of it: a request's own 1.2 ms through
# the proxy took 1.9 ms when each turn of the loop sent its frame), and how many bytes of
# bodies and pieces send them at once.
FLUSH_DELAY_S = 0.02
FRAME_BYTES = 1024 * 1024
# How far behind forwarding recording may fall (an exchange over for its client and not yet
# recorded) before the proxy says so, once; and how often it looks.
LAG_WARNING_S = 5.0
LAG_CHECK_S = 1.0
# Run ids named in one line; the rest are counted.
NAMED_RUNS = 10

# The recording process's first lines: the terminal's and a service manager's signals are
# the proxy's to act on, ignored before anything else is imported (a Ctrl-C during its
# start-up killed it with everything queued).
_START = (
    "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "signal.signal(signal.SIGTERM, signal.SIG_IGN); import sys; "
    "from workbench.engine.http.recording import main; sys.exit(main(sys.argv[1:]))"
)


class RecordingChannel:
    """The forwarding side: messages about exchanges, sent to the recording process."""

    def __init__(
        self,
        home: Path,
        upstream: str,
        anthropic_upstream: str | None,
        *,
        workers: int = 1,
        worker: tuple[int, int, int] | None = None,
    ) -> None:
        """`workers` processes forward (this one and workers - 1 more, which `open()`
        starts with `worker_settings`); or this channel is worker `(fd, index, stride)`'s
        (workbench.engine.http.fleet), whose frames go down pipe `fd`."""
        self._args = [str(home), upstream, anthropic_upstream or ""]
        self._process: asyncio.subprocess.Process | None = None
        self._pipe: asyncio.StreamWriter | None = None  # where frames go
        self._messages: list[msg.Message] = []
        self._pending = 0  # bytes of bodies and pieces in `_messages`
        self._timer: asyncio.TimerHandle | None = None
        self._keys = 0
        self._broken = False
        # Exchanges sent and not yet recorded to their end, with their run once it is known;
        # and those of them over for their client, with when (in the order they got so).
        self._unrecorded: dict[int, str | None] = {}
        self._finished: dict[int, float] = {}
        self._acks: asyncio.Task[None] | None = None
        self._lag_timer: asyncio.TimerHandle | None = None
        self._lag_said = False
        self.cut_runs: list[str] = []  # runs whose trace could not be written whole
        self.unrecorded = 0  # exchanges the recording process ended without recording
        # With several forwarding processes each stamps its messages and sends frames with
        # its watermark, every FLUSH_DELAY_S while it has been busy of late.
        self._worker = worker
        self._index, self._stride = (worker[1], worker[2]) if worker else (0, workers)
        self._merged = self._stride > 1
        self._stamps: list[float] = []
        self._quiet = 0  # empty frames sent in a row
        self._idle = True
        self.workers = Workers() if worker is None and workers > 1 else None
        self.worker_settings: list[str] = []
        # The workers' exchanges, as the recording process reports them.
        self._theirs_done = 0
        self._their_runs: dict[int, str] = {}

    async def open(self) -> None:
        """Start the recording process (in the proxy's event loop), and the workers; a
        worker's channel opens its pipe."""
        loop = asyncio.get_running_loop()
        if self._worker is not None:
            # A stream protocol, whose writer can wait until what it holds is written.
            transport, protocol = await loop.connect_write_pipe(
                lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()),
                os.fdopen(self._worker[0], "wb", buffering=0),
            )
            transport.set_write_buffer_limits(high=MAX_UNRECORDED_BYTES)
            self._pipe = asyncio.StreamWriter(transport, protocol, None, loop)
            return
        pipes = [os.pipe() for _ in range(self._stride - 1)]
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _START,
            *self._args,
            *(str(read) for read, _ in pipes),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            start_new_session=True,
            pass_fds=[read for read, _ in pipes],
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.transport.set_write_buffer_limits(high=MAX_UNRECORDED_BYTES)
        self._pipe = self._process.stdin
        self._acks = asyncio.create_task(self._read_acks(self._process.stdout))
        self._lag_timer = loop.call_later(LAG_CHECK_S, self._check_lag)
        for read, _ in pipes:
            os.close(read)
        if self.workers is not None:
            try:
                await self.workers.start([write for _, write in pipes], self.worker_settings)
            finally:
                for _, write in pipes:
                    os.close(write)

    @property
    def lost(self) -> bool:
        """Whether a capture was lost: exchanges not recorded, or traces cut short."""
        return bool(self.unrecorded or self.cut_runs)

    def arrived(
        self, api: ModelApi, raw: bytes, headers: dict[str, str], query: str, when: float
    ) -> int:
        """A model call's request arrived (its body `raw`, a JSON object); returns the key
        the exchange's other messages name."""
        self._keys += 1
        key = self._index + self._stride * self._keys
        if not self._broken and self._worker is None:
            self._unrecorded[key] = None
        self._send(msg.Arrived(key, api, raw, headers, query, when), len(raw))
        return key

    def went_up(self, key: int, when: float) -> None:
        self._send(msg.WentUp(key, when))

    def piece(self, key: int, when: float, piece: bytes) -> bool:
        """A stream piece, sent before the client gets it (so that the client's next
        request, which may continue its run, comes after it); whether recording is now far
        behind (`full`: the sender should `await room()`), asked here once a piece."""
        self._send(msg.Piece(key, when, piece), len(piece))
        return self.full

    def whole(self, key: int, status: int, body: bytes, when: float) -> None:
        """A whole (non-streamed) answer or an error's body, about to reach the client."""
        self._send(msg.Whole(key, status, body, when), len(body))

    def over(
        self, key: int, when: float, problem: str | None, cut: msg.Cut | None, whole: bool
    ) -> None:
        """The handler is done: the upstream could not be reached or broke off (`problem`),
        the client hung up or the proxy stopped (`cut`), or every piece reached the client
        (`whole`)."""
        if key in self._unrecorded:
            self._finished[key] = time.monotonic()
        self._send(msg.Over(key, when, problem, cut, whole))

    @property
    def full(self) -> bool:
        """Recording is far behind: the sender should `await room()`."""
        pipe = self._pipe
        return pipe is not None and pipe.transport.get_write_buffer_size() > MAX_UNRECORDED_BYTES

    async def room(self) -> None:
        if self._pipe is not None and not self._broken:
            self._flush()
            try:
                await self._pipe.drain()
            except ConnectionError:
                self._gone()

    def _send(self, message: msg.Message, size: int = 0) -> None:
        if self._broken:
            return
        self._messages.append(message)
        self._pending += size
        if self._merged:
            self._stamps.append(time.monotonic())
            if self._idle:
                # Down the pipe before anything of this exchange reaches a client, so that
                # no message another process sends after it can be recorded first.
                self._flush()
                return
        if self._pending >= FRAME_BYTES:
            self._flush()
        elif self._timer is None:
            # One frame for everything of the next moment: one pickle, one write, and the
            # recording process woken once, after the forwarding this message belongs to.
            self._timer = asyncio.get_running_loop().call_later(FLUSH_DELAY_S, self._flush)

    def _flush(self, final: bool = False) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending = 0
        if self._pipe is None:
            return
        if self._merged:
            # Frames go on empty a while after the last message, then one says idle.
            self._quiet = 0 if self._messages else self._quiet + 1
            self._idle = final or self._quiet >= QUIET_FRAMES
            frame: object = (time.monotonic(), self._idle, self._stamps, self._messages)
            self._stamps = []
            if not self._idle:
                self._timer = asyncio.get_running_loop().call_later(FLUSH_DELAY_S, self._flush)
        elif not self._messages:
            return
        else:
            frame = self._messages
        data = pickle.dumps(frame, protocol=pickle.HIGHEST_PROTOCOL)
        self._messages = []
        if self._pipe.is_closing():
            self._gone()
            return
        self._pipe.writelines([FRAME.pack(len(data)), data])
        if self._worker is not None:  # the proxy's process counts what went down the pipe
            with contextlib.suppress(OSError):
                os.write(1, b"%d\n" % self._keys)

    def _gone(self) -> None:
        if not self._broken:
            self._broken = True
            self._messages = []
            _say("the recording process stopped; forwarding goes on unrecorded")

    async def _read_acks(self, stdout: asyncio.StreamReader) -> None:
        """What the recording process says, a report a line."""
        async for line in stdout:
            match msg.read_report(line.decode("utf-8", "replace")):
                case msg.Done(key):
                    if key % self._stride:
                        self._theirs_done += 1
                        self._their_runs.pop(key, None)
                    self._unrecorded.pop(key, None)
                    self._finished.pop(key, None)
                case msg.Begun(key, run_id):
                    if key % self._stride:
                        self._their_runs[key] = run_id
                    if key in self._unrecorded:
                        self._unrecorded[key] = run_id
                case msg.TraceCut(run_id, why):
                    if not self.cut_runs:
                        _say(
                            f"the trace of run {run_id} could not be written whole ({why}); "
                            "it ends at its last whole event, and runs recorded after it may "
                            "be cut too: free some space"
                        )
                    self.cut_runs.append(run_id)
                case None:
                    pass  # not a report (nothing else writes there)
                case unknown:
                    assert_never(unknown)

    def _check_lag(self) -> None:
        """Say once when recording has fallen far behind forwarding."""
        now = time.monotonic()
        oldest = next(iter(self._finished.values()), now)
        if now - oldest > LAG_WARNING_S and not self._lag_said:
            self._lag_said = True
            _say(
                f"recording is {len(self._unrecorded)} exchanges ({now - oldest:.0f} s) behind "
                "forwarding (the machine is busy): none is dropped, and stopping waits for "
                "them"
            )
        if not self._lag_said:
            self._lag_timer = asyncio.get_running_loop().call_later(LAG_CHECK_S, self._check_lag)

    async def close(self, hurry: asyncio.Event | None = None) -> None:
        """Send what is left, end the pipe and wait until everything sent is recorded — or,
        once `hurry` is set, end the recording process and count what it had not recorded.
        With a `hurry` (a signal stopped the proxy; another can hurry it), a backlog that
        takes a moment is said, with how to stop without it."""
        if self._worker is not None and self._pipe is not None:
            self._flush(final=True)
            with contextlib.suppress(ConnectionError):
                self._pipe.close()
                await self._pipe.wait_closed()
            return
        process = self._process
        if process is None:
            return
        self._flush(final=True)
        if self._lag_timer is not None:
            self._lag_timer.cancel()
        killed = False
        if self.workers is not None:
            # They stop as this process does (a SIGTERM to it alone stops them too), and
            # send what they have; once they are gone, what is queued is known.
            self.workers.signal(signal.SIGTERM)
            exited = asyncio.create_task(self.workers.wait())
            killed = not await finish_or_hurry(exited, hurry, lambda: None)
        recorded = asyncio.create_task(self._recorded(process))
        queued = 0

        def say_queued() -> None:
            nonlocal queued
            queued = self._queued()
            if queued:
                again = "(Ctrl-C again stops without them)"
                _say(f"recording {_exchanges(queued)} still queued… {again}")

        killed = killed or not await finish_or_hurry(recorded, hurry, say_queued)
        if killed:
            if self.workers is not None:
                self.workers.kill()
            if process.stdin is not None:
                process.stdin.transport.abort()
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        await recorded
        self._process = None
        self.unrecorded = self._queued()
        if self.unrecorded:
            how = "stopped" if killed else "the recording process ended"
            _say(f"{how} without recording {_exchanges(self.unrecorded)} ({self._runs_left()})")
        elif queued:
            _say(f"done: {_exchanges(queued)} recorded")
        if self.cut_runs:
            _say(f"{_runs(self.cut_runs)} could not be written whole")

    async def _recorded(self, process: asyncio.subprocess.Process) -> None:
        if process.stdin is not None:
            with contextlib.suppress(ConnectionError):
                process.stdin.close()
                await process.stdin.wait_closed()
        if self.workers is not None:
            await self.workers.wait()
        await process.wait()
        if self._acks is not None:
            await self._acks

    def _queued(self) -> int:
        """Exchanges sent (by this process or a worker) and not yet recorded to their end."""
        theirs = sum(self.workers.sent.values()) if self.workers is not None else 0
        return len(self._unrecorded) + max(0, theirs - self._theirs_done)

    def _runs_left(self) -> str:
        known = [run for run in self._unrecorded.values() if run is not None]
        runs = sorted({*known, *self._their_runs.values()})
        unsorted = self._queued() - len(known) - len(self._their_runs)
        if not runs:
            return "not yet sorted into runs"
        return _runs(runs) + (f", and {unsorted} not yet sorted into runs" if unsorted else "")


def _exchanges(count: int) -> str:
    return f"{count} exchange" + ("" if count == 1 else "s")


def _runs(run_ids: list[str]) -> str:
    named = ", ".join(run_ids[:NAMED_RUNS])
    more = f" and {len(run_ids) - NAMED_RUNS} more" if len(run_ids) > NAMED_RUNS else ""
    return ("run " if len(run_ids) == 1 else "runs ") + named + more


def _say(message: str) -> None:
    print(f"workbench proxy: {message}", file=sys.stderr, flush=True)
