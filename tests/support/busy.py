"""Every core kept busy while a test runs, as on a laptop compiling or a shared CI box.

The promises about stopping and recording broke only under load, which a quiet test machine
never applies: a test of them runs its steps inside `busy_cores()`. The spinners are plain
processes at the test's own priority, killed when the block ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def busy_cores() -> Iterator[None]:
    """One spinning process per core for the length of the block."""
    spinners = [
        subprocess.Popen(
            [sys.executable, "-c", "while True: pass"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        for _ in range(os.cpu_count() or 1)
    ]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()
