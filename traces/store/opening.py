"""Opening the store's DuckDB file, and the errors a store raises, each one line naming the
file: another process holding it (waited for), a file being made, a damaged or read-only one.
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

from traces.store.db import duckdb


class StoreError(Exception):
    """A problem with the database file itself, as one line naming the file."""


class StoreLockedError(StoreError):
    pass


class StoreCorruptError(StoreError):
    pass


class StoreReadOnlyError(StoreError):
    """The store cannot be opened for writing: its folder or file is read-only."""


class QueryError(StoreError):
    """A user's SQL failed; the message is DuckDB's first line."""


class UnknownRunError(LookupError):
    pass


class AmbiguousRunError(LookupError):
    pass


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# DuckDB's words when another process holds the file ("Could not set lock on file …:
# Conflicting lock is held in …"); a bare "lock" would also match a corrupt "block".
_LOCKED = re.compile(r"\b(could not set lock|conflicting lock)\b", re.IGNORECASE)


def open_error(path: Path, exc: Exception) -> StoreError:
    message = first_line(exc)
    if _LOCKED.search(message):
        return StoreLockedError(
            f"{path} is in use by another workbench process; close it and try again"
        )
    return StoreCorruptError(
        f"{path} is not a readable workbench database ({message}); move it aside and run "
        "`workbench ingest` again to rebuild it from the traces"
    )


# How new a database file without a header may be to count as one another process is
# making (rather than one left empty by a crash).
_CREATING_S = 10.0


def _being_created(path: Path) -> bool:
    """Whether `path` is a database file another process has just created and not yet
    written: DuckDB creates the file, then locks it, then writes its header, so a second
    process can open it in between and read it as "not a valid DuckDB file". Such a file
    is new and holds nothing but zeros (or nothing); a damaged one is left alone."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) or time.time() - info.st_mtime > _CREATING_S:
            return False
        with path.open("rb") as handle:
            return not handle.read(4096).strip(b"\0")
    except OSError:
        return False


def _file_identity(path: Path) -> tuple[int, int, int] | None:
    """Which file `path` is and how far it is written: a replaced or grown file differs."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def _check_writable(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreReadOnlyError(f"cannot create {path.parent} ({exc.strerror or exc})") from None
    # DuckDB writes the file and a write-ahead log beside it.
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise StoreReadOnlyError(f"{path} cannot be written (a read-only disk or folder)")


def connect(path: Path, read_only: bool, wait_s: float) -> duckdb.DuckDBPyConnection:
    """A connection to the database at `path`; while another process holds it (or is just
    making it, see `_being_created`), keep trying for `wait_s`."""
    if read_only and not path.exists():
        raise StoreError(f"{path} does not exist yet; run `workbench ingest` first")
    if not read_only and str(path) != ":memory:":
        _check_writable(path)
    deadline = time.monotonic() + wait_s
    pause = 0.02
    while True:
        seen = _file_identity(path)
        try:
            conn = duckdb.connect(str(path), read_only=read_only)
            break
        except duckdb.Error as exc:
            error = open_error(path, exc)
            # Another process holds the file, or is making it: wait for it either way.
            # A file that changed meanwhile (the maker moved the finished one into
            # place) is tried again: what failed was what was there before.
            waits = (
                isinstance(error, StoreLockedError)
                or _being_created(path)
                or _file_identity(path) != seen
            )
            if not waits or time.monotonic() >= deadline:
                raise error from None
        time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
        pause = min(pause * 2, 0.25)
    return conn
