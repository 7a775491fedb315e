"""Verify replay in a process of its own, so a long replay never holds the caller's interpreter.

    outcome = await replay_in_process(trace_path, on_progress=print)

    async with ReplayProcess(trace_path) as child:   # the same, step by step
        async for report in child.reports():        # ReplayProgress as it goes, then
            ...                                     # the ReplayOutcome; leaving the block
                                                    # (or cancelling its task) kills it

A replay of a long run is seconds of CPU-bound Python (most of it reading and validating
the trace): in a thread of the TUI it would hold the interpreter and freeze the screen.
`python -m workbench.engine.recording.replay.process TRACE` reads the trace file (never the
store, which the caller may hold open), replays it as `workbench replay` does and prints one
JSON line per report, at most every PROGRESS_EVERY_S: `{"read": bytes, "size": bytes}`
while it reads the trace, `{"compared": n, "total": N}` while it replays, and last
`{"outcome": ...}` (`ReplayOutcome.to_json`), `{"refused": why}` for a run the workbench
agent did not drive or `{"failed": why}` for a recording it cannot use, each one line. It
runs at a lower CPU priority and ends itself when its stdin closes, so it never outlives the
process that started it, however that one ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from workbench.engine.recording.replay.verify import NotReplayable, ReplayOutcome

PROGRESS_EVERY_S = 0.1
# The replay process's CPU priority below its caller's, as the proxy's recording process.
NICENESS = 10
# The longest report line read (an outcome's field diffs hold whole recorded values).
MAX_REPORT_BYTES = 256 * 1024 * 1024
_STDERR_LINES = 20


class ReplayProcessError(Exception):
    """The replay process could not give an outcome: its recording is unusable, or it
    ended without one (killed, out of memory, a bug). One line."""


@dataclass(frozen=True)
class ReplayProgress:
    """How far the replay is: `done` of `total` bytes of the trace read (`stage` "reading"),
    then `done` of the `total` recorded events matched ("replaying")."""

    stage: Literal["reading", "replaying"]
    done: int
    total: int


ReplayReport = ReplayProgress | ReplayOutcome


class ReplayProcess:
    """The replay of one trace file in a child process; an async context manager whose
    exit (or the cancellation of the task inside it) kills the process if it still runs."""

    def __init__(self, trace: Path) -> None:
        self.trace = trace
        self._process: asyncio.subprocess.Process | None = None
        self._stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self._drain: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ReplayProcess:
        await self.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            __name__,
            str(self.trace),
            stdin=asyncio.subprocess.PIPE,  # never written: its closing ends the child
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,  # kept for the error line, off the terminal
            limit=MAX_REPORT_BYTES,
        )
        self._drain = asyncio.create_task(self._read_stderr())

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def returncode(self) -> int | None:
        """The process's exit code once it ended and was waited for (negative: a signal)."""
        return self._process.returncode if self._process is not None else None

    def kill(self) -> None:
        """Stop the process now if it still runs (no await: safe from any cleanup)."""
        if self._process is not None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()

    async def close(self) -> None:
        """Kill the process if it still runs, and wait for it to be gone."""
        if self._process is None:
            return
        self.kill()
        await self._process.wait()
        if self._drain is not None:
            await self._drain

    async def reports(self) -> AsyncIterator[ReplayReport]:
        """Each `ReplayProgress` as the child sends it, then its `ReplayOutcome`. Raises
        `NotReplayable` for a run replay cannot verify, `ReplayProcessError` otherwise."""
        assert self._process is not None and self._process.stdout is not None, "not started"
        stdout = self._process.stdout
        while True:
            try:
                line = await stdout.readline()
            except ValueError:  # longer than MAX_REPORT_BYTES
                raise ReplayProcessError("a report of the replay process was too long") from None
            if not line:
                break
            try:
                report = json.loads(line)
            except ValueError:
                continue  # not one of its reports: something the replay printed
            if not isinstance(report, dict):
                continue
            if "read" in report:
                yield ReplayProgress("reading", int(report["read"]), int(report["size"]))
            elif "compared" in report:
                yield ReplayProgress("replaying", int(report["compared"]), int(report["total"]))
            elif "outcome" in report:
                yield ReplayOutcome.from_json(report["outcome"])
                return
            elif "refused" in report:
                raise NotReplayable(str(report["refused"]))
            elif "failed" in report:
                raise ReplayProcessError(str(report["failed"]))
        code = await self._process.wait()
        if self._drain is not None:
            await self._drain
        last = self._stderr[-1] if self._stderr else ""
        raise ReplayProcessError(
            f"the replay process ended ({_exit_text(code)}) before its outcome"
            + (f": {last}" if last else "")
        )

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        stderr = self._process.stderr
        while True:
            try:
                line = await stderr.readline()
            except ValueError:  # a line longer than the limit: skip it
                continue
            if not line:
                return
            text = " ".join(line.decode(errors="replace").split())
            if text:
                self._stderr.append(text[:240])


def _exit_text(code: int) -> str:
    if code < 0:
        import signal

        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


async def replay_in_process(
    trace: Path, on_progress: Callable[[ReplayProgress], object] | None = None
) -> ReplayOutcome:
    """The outcome of replaying `trace` in a `ReplayProcess`; `on_progress` hears each
    report. Cancelling the awaiting task kills the process."""
    async with ReplayProcess(trace) as child:
        async for report in child.reports():
            if isinstance(report, ReplayOutcome):
                return report
            if on_progress is not None:
                on_progress(report)
    raise AssertionError("reports end with an outcome or raise")


# --------------------------------------------------------------------- the child process


def _end_with_parent() -> None:
    """Exit as soon as stdin closes: the parent ended or let go of this replay."""

    def watch() -> None:
        with contextlib.suppress(OSError, ValueError):
            while sys.stdin.buffer.read(65536):
                pass
        os._exit(3)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


def _report(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    from workbench.engine.recording.replay.streamed import streamed_source
    from workbench.engine.recording.replay.verify import ReplayStep, replay_run
    from workbench.engine.recording.runs.load import RecordingError

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m workbench.engine.recording.replay.process TRACE", file=sys.stderr)
        return 2
    _end_with_parent()
    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(NICENESS)
    path = Path(args[0])
    due = 0.0

    def report_due() -> bool:
        nonlocal due
        now = time.monotonic()
        if now < due:
            return False
        due = now + PROGRESS_EVERY_S
        return True

    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # reading it says why

    def reading(read: int) -> None:
        if report_due():
            _report(read=read, size=size)

    def replaying(step: ReplayStep) -> None:
        if report_due():
            _report(compared=step.position + 1, total=step.total)

    try:
        recording = streamed_source(path, reading)
    except RecordingError as exc:
        _report(failed=str(exc))
        return 2
    _report(read=size, size=size)  # read: what follows is indexing it for the replay
    try:
        outcome = asyncio.run(replay_run(recording, pace="fast", on_step=replaying))
    except NotReplayable as exc:
        _report(refused=str(exc))
        return 2
    _report(outcome=outcome.to_json())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
