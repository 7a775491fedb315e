"""How far a long ingest is (100,000 traces to read into a rebuilt store, say), for whoever
shows it: the CLI on stderr, the TUI in its status line.

Ingest goes through a few steps, each a share of the whole; within a step, most of the
time goes to one DuckDB statement, whose own progress a thread polls every tenth of a
second. The store only reports; it never prints.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from traces.store.db import duckdb

# (what is being done, fraction of the whole ingest done, 0 to 1)
Progress = Callable[[str, float], None]

POLL_S = 0.1


class Watch:
    """The step ingest is in; `step` starts the next one."""

    def __init__(self, cur: duckdb.DuckDBPyConnection, report: Progress | None) -> None:
        self._cur = cur
        self._report = report
        self._what = ""
        self._base = 0.0
        self._share = 0.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._last = 0.0  # never reported backwards: a step's later statements restart at 0

    def step(self, what: str, share: float) -> None:
        """Start a step that takes `share` of the whole; the steps' shares add up to 1."""
        with self._lock:
            self._base = min(1.0, self._base + self._share)
            self._what, self._share = what, share
            self._send(0.0)

    def _send(self, within: float) -> None:
        self._last = max(self._last, min(1.0, self._base + self._share * within))
        if self._report is not None:
            self._report(self._what, self._last)

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            percent = self._cur.query_progress()
            if percent >= 0:
                with self._lock:
                    self._send(min(percent, 100.0) / 100.0)

    @contextmanager
    def running(self) -> Iterator[Watch]:
        if self._report is None:
            yield self
            return
        # DuckDB tracks a statement's progress only with its progress bar on; it must not
        # print it itself.
        self._cur.execute("SET enable_progress_bar = true")
        self._cur.execute("SET enable_progress_bar_print = false")
        poller = threading.Thread(target=self._poll, name="ingest-progress", daemon=True)
        poller.start()
        try:
            yield self
        finally:
            self._stop.set()
            poller.join()
            with self._lock:
                self._base, self._share = 1.0, 0.0
                self._send(0.0)
