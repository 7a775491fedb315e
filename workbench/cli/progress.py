"""The CLI's one progress bar, on stderr (ingest, export-otel, test): nothing while the work
takes under a second (unless told otherwise), past that a bar redrawn in place on a
terminal. Off a terminal (scripts, pipes, CI logs) nothing, as pip, git and curl do, unless
asked with `workbench --progress`: then a plain line at each tenth."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

SHOW_AFTER_S = 1.0
REDRAW_S = 0.1
WIDTH = 30

# Set by `--progress` (`show_off_terminal`): progress lines on a stderr that is no terminal.
_off_terminal = False


def show_off_terminal(shown: bool = True) -> None:
    """Print progress lines even where stderr is not a terminal (`workbench --progress`)."""
    global _off_terminal
    _off_terminal = shown


class StderrProgress:
    """A `traces.store.progress.Progress` callback: `(what, done)`, `done` from 0 to 1.

    May be called from another thread; `close` ends the bar's line."""

    def __init__(self, stream: TextIO | None = None, show_after_s: float = SHOW_AFTER_S) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.shown = self.tty or _off_terminal
        self._show_at = time.monotonic() + show_after_s
        self._drawn_at = 0.0
        self._tenth = -1
        self._shown = False
        self._lock = threading.Lock()

    def __call__(self, what: str, done: float) -> None:
        now = time.monotonic()
        if not self.shown or now < self._show_at:
            return
        with self._lock:
            if self.tty:
                if now - self._drawn_at < REDRAW_S and done < 1.0:
                    return
                self._drawn_at = now
                filled = int(WIDTH * done)
                bar = "#" * filled + "-" * (WIDTH - filled)
                self.stream.write(f"\r[{bar}] {done:4.0%} {what}\x1b[K")
            else:
                tenth = int(done * 10)
                if tenth == self._tenth:
                    return
                self._tenth = tenth
                self.stream.write(f"workbench: {done:.0%} {what}\n")
            self.stream.flush()
            self._shown = True

    def close(self) -> None:
        with self._lock:
            if self._shown and self.tty:
                self.stream.write("\n")
                self.stream.flush()
            self._shown = False
