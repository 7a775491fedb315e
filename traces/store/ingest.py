"""Bulk, incremental, idempotent ingest of `.jsonl` traces into the store, in batches.

Python only decides what to read (`traces.store.scan` finds what is new: sizes against what
is already ingested); DuckDB reads, validates and inserts, set-based
(`traces.store.ingest_batch`). Two paths:

- bulk: a new file up to BULK_FILE_MAX goes straight through `read_ndjson_objects`, the fast
  path that carries most data, and is kept when every line of it is whole and good;
- careful: the new whole lines of a grown file, a bigger file, and a bulk file that did not
  go in cleanly (a bad line, a cut-off last line) are read line by line with exact line
  numbers, a piece of up to BATCH_BYTES at a time.

Nothing here holds a whole home, file or stream: the work goes in batches of at most
BATCH_BYTES and BATCH_FILES, each its own transaction, so memory stays bounded whatever the
sizes and a kill loses at most the batch it was in (the next ingest goes on from the last
batch committed: `trace_files` says how far each file was read). A batch DuckDB cannot
take is split until the file that fails is alone; that file is one problem line with
DuckDB's reason, and is tried again once it changes. Only a failure to write the store at
all (a full disk) stops the ingest, keeping the batches before it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from traces.store.db import duckdb
from traces.store.ingest_batch import LongLineError, read_batch, record_files
from traces.store.progress import Progress, Watch
from traces.store.scan import IngestReport, Work

# One batch reads at most this many new bytes (or one line, if longer) of at most this
# many files: DuckDB reads a batch well within INGEST_MEMORY_LIMIT.
BATCH_BYTES = 64 << 20
BATCH_FILES = 20_000
# Whole new files up to this size go through DuckDB's reader as they are (its longest
# object is 16 MiB); bigger ones are read in pieces.
BULK_FILE_MAX = 8 << 20
# A batch that fails is halved down to one file and this many bytes (lines longer than
# `ingest_batch.LONG_LINE` are read one at a time anyway) before its file is reported.
_SMALLEST_BATCH = 4 << 20


@dataclass(frozen=True)
class Limits:
    """How batches are sized; smaller after a batch DuckDB could not take."""

    batch_bytes: int = BATCH_BYTES
    batch_files: int = BATCH_FILES
    bulk_file_max: int = BULK_FILE_MAX


def _files(count: int, noun: str = "file") -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def ingest_work(
    cur: duckdb.DuckDBPyConnection,
    work: list[Work],
    report: IngestReport,
    progress: Progress | None = None,
) -> IngestReport:
    """Read the new part of each file `pending` found into the store, a batch at a time;
    `progress` hears how far it is (`traces.store.progress`)."""
    if not work:
        return report
    runs_before = cur.execute("SELECT count(*) FROM runs").fetchone()
    events_before = cur.execute("SELECT count(*) FROM events").fetchone()
    # Rows may land in any order (keeping it costs a third of a bulk insert): a bulk row's
    # position is never read, and the careful path numbers its lines itself.
    cur.execute("SET SESSION preserve_insertion_order = false")
    memory_limit = _lower_memory_limit(cur)
    try:
        with (
            tempfile.TemporaryDirectory(prefix="workbench-ingest-") as scratch,
            Watch(cur, progress).running() as watch,
        ):
            _Batches(cur, work, Path(scratch), report, watch).run()
    finally:
        with contextlib.suppress(duckdb.Error):
            cur.execute("RESET SESSION preserve_insertion_order")
        with contextlib.suppress(duckdb.Error):
            _restore_memory_limit(cur, memory_limit)
    runs_after = cur.execute("SELECT count(*) FROM runs").fetchone()
    events_after = cur.execute("SELECT count(*) FROM events").fetchone()
    report.files = sum(1 for item in work if item.size)
    report.new_runs = (runs_after or (0,))[0] - (runs_before or (0,))[0]
    report.new_events = (events_after or (0,))[0] - (events_before or (0,))[0]
    return report


def _fatal(exc: duckdb.Error) -> bool:
    """Whether a failure is of the store itself (it cannot be written: a full disk, a file
    size limit, a database DuckDB gave up on), not of the files a batch read."""
    if isinstance(exc, (duckdb.IOException, duckdb.FatalException)):
        return True
    # A COMMIT whose write-ahead log cannot grow is a TransactionException.
    return any(words in str(exc) for words in _STORE_FAILURES)


_STORE_FAILURES = ("Failed to commit", "Could not write", "invalidated")


@dataclass(frozen=True)
class _State:
    """A `Work`'s fields before a batch, put back when the batch rolls back (a copy of its
    fields: `dataclasses.replace` of 20,000 files a batch cost a tenth of a second)."""

    fields: dict[str, object]
    bytes_done: int


class _Batches:
    """The files to read, in batches; see the module's docstring."""

    def __init__(
        self,
        cur: duckdb.DuckDBPyConnection,
        work: list[Work],
        scratch: Path,
        report: IngestReport,
        watch: Watch,
    ) -> None:
        self._cur, self._scratch, self._report, self._watch = cur, scratch, report, watch
        self._limits = Limits()
        self._idle: list[Work] = []  # files with nothing to read: only their size is noted
        self._queue: deque[Work] = deque()
        for item in work:
            self._plan(item)
        self._total = max(1, sum(self._new_bytes(item) for item in self._queue))
        self._done = 0

    def _plan(self, item: Work) -> None:
        known = item.known
        if known is not None and item.size < known.bytes_done:
            known = None  # shorter than what was ingested: the file was replaced
            item.restart = True
        if known is not None:
            item.bytes_done, item.lines_done = known.bytes_done, known.lines_done
            item.run_id, item.refused = known.run_id, known.refused
        if item.refused or (item.size <= item.bytes_done and not item.restart):
            self._idle.append(item)
            return
        # A new file that turns out to end in a cut-off line is not kept from the bulk read
        # (`ingest_batch._reads_cleanly`): it goes on to the careful path like a bad line.
        item.bulk = known is None and item.size <= self._limits.bulk_file_max
        self._queue.append(item)

    def _new_bytes(self, item: Work) -> int:
        return item.size - item.bytes_done

    def _cost(self, item: Work) -> int:
        """The bytes the next batch reads of `item` at most (bar a single longer line)."""
        return min(self._new_bytes(item), self._limits.batch_bytes)

    def run(self) -> None:
        if self._idle:
            self._commit(lambda: record_files(self._cur, self._idle))
        count = 0
        while self._queue:
            batch = [self._queue.popleft()]
            cost = self._cost(batch[0])
            while self._queue and len(batch) < self._limits.batch_files:
                if cost + self._cost(self._queue[0]) > self._limits.batch_bytes:
                    break
                item = self._queue.popleft()
                batch.append(item)
                cost += self._cost(item)
            count += 1
            self._read(batch, cost, count)

    def _read(self, batch: list[Work], cost: int, count: int) -> None:
        """One batch in its own transaction. After a batch DuckDB cannot take, batches are
        halved; a file that fails alone is reported and left where it was."""
        before = [_State(vars(item).copy(), item.bytes_done) for item in batch]
        problems: list[str] = []
        more: list[Work] = []
        share = cost / self._total
        label = _files(len(batch), "trace file")
        if count > 1 or self._queue:
            label += f" (batch {count}, {self._done * 100 // self._total}% read)"

        def body() -> None:
            # Shares of a batch, from a rebuild of 100,000 runs: reading is most of it.
            self._watch.step(f"reading {label}", share * 0.8)
            more.extend(
                read_batch(self._cur, batch, self._scratch, problems, self._limits.batch_bytes)
            )
            self._watch.step(f"summing up runs ({_files(len(batch))})", share * 0.15)
            self._watch.step(f"writing the store ({_files(len(batch))})", share * 0.05)

        try:
            self._commit(body)
        except (LongLineError, duckdb.Error, OSError) as exc:
            for item, state in zip(batch, before, strict=True):
                item.__dict__.update(state.fields)
            if self._skip_gone(batch):
                return
            if isinstance(exc, OSError):
                raise  # the store could not be written (StoreWriteError)
            self._rolled_back(batch, cost, exc)
            return
        self._report.problems.extend(problems)
        self._done += sum(
            item.bytes_done - state.bytes_done for item, state in zip(batch, before, strict=True)
        )
        self._queue.extendleft(reversed(more))

    def _skip_gone(self, batch: list[Work]) -> bool:
        """After a batch that failed: whether some of its files were deleted since they
        were found (DuckDB cannot open them), each then one note, the others read again."""
        there = {item.path: os.path.isfile(item.path) for item in batch}
        if all(there.values()):
            return False
        for item in batch:
            if not there[item.path]:
                self._report.problems.append(f"{item.path}: gone while being ingested; skipped")
        self._queue.extendleft(reversed([item for item in batch if there[item.path]]))
        return True

    def _rolled_back(self, batch: list[Work], cost: int, exc: LongLineError | duckdb.Error) -> None:
        """After a batch that failed (its files back where they were): a long line that
        failed is its file's problem, the others go again; any other failure makes batches
        smaller, down to one file that is then reported."""
        if isinstance(exc, LongLineError):
            failed = [item for item in batch if item.path == exc.path]
            self._failed(failed, f"{exc.path}:{exc.line_no}", exc.cause)
            self._queue.extendleft(reversed([item for item in batch if item.path != exc.path]))
            return
        if len(batch) > 1 or cost > _SMALLEST_BATCH:
            # Smaller batches from here on: DuckDB has less memory than they assumed.
            self._limits = replace(
                self._limits,
                batch_files=max(1, len(batch) // 2),
                batch_bytes=max(_SMALLEST_BATCH, cost // 2),
            )
            self._queue.extendleft(reversed(batch))
            return
        where = f"{batch[0].path}:{batch[0].lines_done + 1}"
        self._failed(batch, where, exc)

    def _failed(self, items: list[Work], where: str, exc: duckdb.Error) -> None:
        """A file DuckDB could not take from line `where` on: one problem line; what was
        read of it before stays, and it is tried again once it changes."""
        self._report.problems.append(
            f"{where}: cannot be ingested from this line on ({_first_line(exc)}); the rest "
            "of the home was ingested, and this file is tried again once it changes"
        )
        with contextlib.suppress(duckdb.Error):
            self._commit(lambda: record_files(self._cur, items))

    def _commit(self, body: Callable[[], None]) -> None:
        cur = self._cur
        cur.execute("BEGIN TRANSACTION")
        try:
            body()
            cur.execute("COMMIT")
        except BaseException as exc:
            # A failed COMMIT (a full disk) may already have ended the transaction; the
            # error that matters is the first one.
            with contextlib.suppress(duckdb.Error):
                cur.execute("ROLLBACK")
            cause = exc.cause if isinstance(exc, LongLineError) else exc
            if isinstance(cause, duckdb.Error) and _fatal(cause):
                raise StoreWriteError(cause) from None
            raise


class StoreWriteError(OSError):
    """The store could not be written (see `_fatal`); `TraceStore` says so in one line."""

    def __init__(self, exc: duckdb.Error) -> None:
        super().__init__(_first_line(exc))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# DuckDB's memory while ingesting, at most: a rebuild of 100,000 runs peaks at 1.2 GB of
# RSS under it instead of 1.7 GB under DuckDB's default (80% of RAM), in the same time;
# what a batch needs beyond it spills to DuckDB's temp directory, next to the store.
INGEST_MEMORY_LIMIT = 1 << 30
# How DuckDB shows a size (`current_setting('memory_limit')`), e.g. "18.8 GiB".
_SIZE_UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def _lower_memory_limit(cur: duckdb.DuckDBPyConnection) -> str | None:
    """Lower DuckDB's memory limit (the database's, not the cursor's) to
    INGEST_MEMORY_LIMIT, never raise it; returns the limit it had, when lowered."""
    row = cur.execute("SELECT current_setting('memory_limit')").fetchone()
    before = str(row[0]) if row else ""
    number, _, unit = before.partition(" ")
    try:
        if float(number) * _SIZE_UNITS[unit] <= INGEST_MEMORY_LIMIT:
            return None
    except (ValueError, KeyError):
        return None  # a limit shown in a way this does not know: left as it is
    cur.execute(f"SET memory_limit = '{INGEST_MEMORY_LIMIT} bytes'")
    return before


def _restore_memory_limit(cur: duckdb.DuckDBPyConnection, before: str | None) -> None:
    if before is None:
        return
    # RESET gives DuckDB's default exactly; a limit set otherwise is set back as shown.
    cur.execute("RESET memory_limit")
    if cur.execute("SELECT current_setting('memory_limit')").fetchone() != (before,):
        cur.execute(f"SET memory_limit = '{before}'")
