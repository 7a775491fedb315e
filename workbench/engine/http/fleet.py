"""`workbench proxy --workers N`: forwarding on N processes, recording in one.

The proxy's own process and N-1 worker processes each listen on the same port
(SO_REUSEPORT: the kernel spreads the connections) and forward. Each sends what its handlers
see down a pipe of its own (workbench.engine.http.channel) to the one recording process,
which records the exchanges of all of them in the order they happened, as one proxy's.

That order is what sorts exchanges into runs (a request continues the exchanges whose
answer was over for their client before it came), and a client's next request may reach
another process than its last. So every message is stamped with `time.monotonic()` (one
clock for every process on the machine) when it is sent, every frame carries its sender's
watermark (the time it was sent: nothing stamped before is still to come from it), and the
recording process (`Merge`) hands on a message only once every other sender's watermark
has passed its stamp, or that sender said it is idle. A sender with nothing to send says
so every FLUSH_DELAY_S (an empty frame) for a while, then that it is idle; an idle sender's
next message goes down its pipe at once, before anything it belongs to reaches a client,
and the recording process reads every pipe before it hands anything on, so a message that
follows it (in another process, after that client was answered) is never handed on first.

The proxy's process keeps the account of what is recorded: the recording process tells it
(as for its own exchanges) which run each worker's exchange went into and when it is
recorded; each worker tells it, on its stdout, how many exchanges it has sent so far. Keys
do not collide: process i of N numbers its exchanges i + N, i + 2N, …
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections import deque
from dataclasses import dataclass, field

from workbench.engine.http.recording_messages import Arrived, Message, Piece, Whole

# How many empty frames a sender with nothing to send sends (one each FLUSH_DELAY_S) before
# it says it is idle: a stream's pauses (a model thinking) keep it from going idle and
# waking the recording process at its next piece.
QUIET_FRAMES = 5

# A worker's first lines, as the recording process's: its signals are its own server's.
_WORKER = (
    "import sys; from workbench.engine.http.fleet_worker import worker_main; "
    "sys.exit(worker_main(sys.argv[1:]))"
)


@dataclass
class _Sender:
    queue: deque[tuple[float, Message]] = field(default_factory=deque)
    held: int = 0  # bytes of bodies and pieces in `queue`
    watermark: float = float("-inf")
    idle: bool = True
    partial: bool = False  # part of a frame is read, the rest not yet
    ended: bool = False


class Merge:
    """The messages of several senders, handed on in the order they were sent."""

    def __init__(self, senders: list[int]) -> None:
        self._senders = {index: _Sender() for index in senders}

    def add(
        self, index: int, watermark: float, idle: bool, stamps: list[float], messages: list[Message]
    ) -> None:
        sender = self._senders[index]
        sender.queue.extend(zip(stamps, messages, strict=True))
        sender.held += sum(map(_size, messages))
        sender.watermark, sender.idle = watermark, idle

    def held(self, index: int) -> int:
        """Bytes of bodies and pieces from sender `index` waiting for the others: its
        reader stops reading past a bound (its pipe fills, so it waits), and goes on
        reading the senders held back for."""
        return self._senders[index].held

    def partial(self, index: int, partial: bool) -> None:
        self._senders[index].partial = partial

    def ended(self, index: int) -> None:
        self._senders[index].ended = True

    @property
    def done(self) -> bool:
        return all(sender.ended and not sender.queue for sender in self._senders.values())

    def release(self) -> list[Message]:
        """The messages no sender can still send anything before."""
        out: list[Message] = []
        senders = list(self._senders.values())
        while True:
            first: _Sender | None = None
            for sender in senders:
                if sender.queue and (first is None or sender.queue[0][0] < first.queue[0][0]):
                    first = sender
            if first is None:
                return out
            stamp = first.queue[0][0]
            for other in senders:
                if other is first or other.queue or other.ended:
                    continue
                if (other.partial or not other.idle) and other.watermark < stamp:
                    return out  # it may still send something stamped before
            message = first.queue.popleft()[1]
            first.held -= _size(message)
            out.append(message)


def _size(message: Message) -> int:
    match message:
        case Arrived(raw=data) | Piece(piece=data) | Whole(body=data):
            return len(data)
        case _:
            return 0


# What a worker says on its stdout once it accepts connections on the shared port.
LISTENING = "listening"


class WorkerFailed(Exception):
    """A worker process ended before it listened on the shared port."""


class Workers:
    """The proxy's worker processes: started with their pipes, counted, stopped."""

    def __init__(self) -> None:
        self._processes: list[asyncio.subprocess.Process] = []
        self._readers: list[asyncio.Task[None]] = []
        self.sent: dict[int, int] = {}  # exchanges each worker has sent down its pipe

    async def start(self, fds: list[int], settings: list[str]) -> None:
        """One worker for each pipe's write end in `fds` (closed here once passed on);
        `settings` are worker_main's arguments after the first three. Returns once every
        worker listens on the port (until then the kernel gives them no connection, and a
        proxy that said it was ready would forward on one process only)."""
        stride = len(fds) + 1
        listening: list[asyncio.Future[None]] = []
        for index, fd in enumerate(fds, start=1):
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                _WORKER,
                str(fd),
                str(index),
                str(stride),
                *settings,
                stdout=asyncio.subprocess.PIPE,
                pass_fds=(fd,),
            )
            self._processes.append(process)
            assert process.stdout is not None
            listening.append(asyncio.get_running_loop().create_future())
            self._readers.append(
                asyncio.create_task(self._count(index, process.stdout, listening[-1]))
            )
        try:
            await asyncio.gather(*listening)
        except WorkerFailed:
            self.kill()
            raise

    async def _count(
        self, index: int, stdout: asyncio.StreamReader, listening: asyncio.Future[None]
    ) -> None:
        async for line in stdout:
            text = line.decode().strip()
            if text.isdigit():
                self.sent[index] = int(text)
            elif text == LISTENING and not listening.done():
                listening.set_result(None)
        if not listening.done():
            listening.set_exception(WorkerFailed(f"proxy worker {index} ended before it listened"))

    def signal(self, number: int) -> None:
        for process in self._processes:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(number)

    async def wait(self) -> None:
        """Until every worker has exited and said how many exchanges it sent."""
        for process in self._processes:
            await process.wait()
        for reader in self._readers:
            await reader

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
