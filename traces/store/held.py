"""A store held open between calls and let go when idle, for a long-lived process (the
TUI, `mcp-serve`).

DuckDB lets one process at a time open the database, and opening it costs tens of
milliseconds, more than most queries: a process answering many calls keeps it open while
they come, and lets go of it once none has used it for a moment, so that `workbench runs`
or `show` in another terminal still get their turn (they wait a few seconds for it,
`store.LOCK_WAIT_S`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from traces.store.store import TraceStore

# Seconds without a store call after which the database is let go for other processes.
IDLE_RELEASE_S = 1.0


class HeldStore:
    """The store `opener` opens, opened on the first call and shared by the calls after it
    (one at a time) until `idle_s` pass without one."""

    def __init__(self, opener: Callable[[], TraceStore], idle_s: float = IDLE_RELEASE_S) -> None:
        self._opener = opener
        self.idle_s = idle_s
        self._store: TraceStore | None = None
        self._lock = threading.RLock()
        self._release: threading.Timer | None = None
        self.released = threading.Event()  # set while the database is not held
        self.released.set()

    @contextmanager
    def session(self) -> Iterator[TraceStore]:
        """The open store, opened on demand; let go once no call has used it for a while."""
        with self._lock:
            self._cancel_release()
            if self._store is None:
                self._store = self._opener()
                self.released.clear()
            try:
                yield self._store
            finally:
                self._release = threading.Timer(self.idle_s, self.release)
                self._release.daemon = True
                self._release.start()

    def release(self) -> None:
        """Close the database now (it reopens on the next call)."""
        with self._lock:
            self._cancel_release()
            if self._store is not None:
                self._store.close()
                self._store = None
            self.released.set()

    def _cancel_release(self) -> None:
        if self._release is not None:
            self._release.cancel()
            self._release = None
