"""Workbench commands run as processes, the way people run them: the `workbench` script,
their output read line by line as it comes, and a disk that fills up (a file size limit)."""

from __future__ import annotations

import os
import queue
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

WORKBENCH = str(Path(sys.executable).with_name("workbench"))
WAIT_S = 120.0  # generous: a deadline for a hang, on a machine whose cores may be busy


def workbench_at(
    home: Path, *argv: str, timeout: float = WAIT_S
) -> subprocess.CompletedProcess[str]:
    """`workbench --home HOME ARGV…` run to its end, on a 100-column terminal."""
    return subprocess.run(
        [WORKBENCH, "--home", str(home), *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "100"},
    )


# Runs a command as its only child and writes the child's peak RSS (KiB) to a file: the
# test's own process reaps other tests' children too (pytest-xdist runs many tests in one
# worker), so its RUSAGE_CHILDREN may be another process's peak.
_PEAK = (
    "import resource, subprocess, sys; done = subprocess.run(sys.argv[2:]); "
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
    "sys.exit(done.returncode)"
)


def workbench_peak(
    home: Path, scratch: Path, *argv: str, timeout: float = WAIT_S
) -> tuple[subprocess.CompletedProcess[str], int]:
    """`workbench_at`, and the peak RSS in KiB of that `workbench` process alone."""
    peak = scratch / "peak-kb"
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, str(peak), WORKBENCH, "--home", str(home), *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "100"},
    )
    return done, int(peak.read_text())


@dataclass
class Lines:
    """A pipe's lines as they come, read by a thread of their own."""

    pipe: IO[str]
    seen: list[str] = field(default_factory=list)
    _new: queue.Queue[str | None] = field(default_factory=queue.Queue)

    def __post_init__(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.pipe:
            self._new.put(line.rstrip("\n"))
        self._new.put(None)

    def wait_for(self, wanted: Callable[[str], bool]) -> str | None:
        """The first line (seen or to come) that is `wanted`; None at the pipe's end."""
        for line in self.seen:
            if wanted(line):
                return line
        deadline = time.monotonic() + WAIT_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                new = self._new.get(timeout=left)
            except queue.Empty:
                break
            if new is None:
                self._new.put(None)
                return None
            self.seen.append(new)
            if wanted(new):
                return new
        return None

    def all(self) -> list[str]:
        """Every line, once the pipe has ended."""
        self.wait_for(lambda line: False)
        return self.seen


def workbench_process(*argv: str) -> subprocess.Popen[str]:
    """`workbench ARGV…` started as people start it, its output piped as text and unbuffered,
    so a server's first line (where it listens) can be read as soon as it is printed."""
    return subprocess.Popen(
        [WORKBENCH, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"PYTHONUNBUFFERED": "1"},
    )


def file_size_limit(limit: int) -> Callable[[], None]:
    """A `preexec_fn` that lets the process (and its children) write at most `limit` bytes
    per file: past it a write fails as on a full disk."""

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limit_file_size


@contextmanager
def killed_after(process: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """The process, killed when the block ends if it still runs (the test failed first)."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
