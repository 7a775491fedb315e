"""What ingest has to do: the trace files found, against what the store has already read.

This runs before every command that reads the store, so it stays light: the standard
library and a few queries, no event models (`traces.store.ingest` loads those, and is
imported only when something is new). Two looks:

- `pending`, the exact one (`workbench ingest PATH`): every file's size against what was
  read of it;
- `pending_in_folder`, the quick one every command takes of the home's traces: the names
  in the folder against the files the store knows, and the sizes of only the new files and
  of those whose run has not ended. A run that ended is not written to again, so with
  100,000 runs the look still takes a few stats, not 100,000. And when no folder under the
  traces has changed since a look whose files are all in the store (their modification
  times say so), the names are not even listed.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from traces.store.db import duckdb
from traces.store.sql import KNOWN_FILES, LISTING_GET, NEW_FILES, OPEN_FILES

# A folder's modification time is trusted only once it is this old: a file created within
# the same clock tick as an earlier change, after the listing, would not move it.
SETTLED_NS = 2_000_000_000


@dataclass
class IngestReport:
    files: int = 0  # files that had something new
    new_events: int = 0
    new_runs: int = 0
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Known:
    run_id: str | None
    bytes_done: int
    lines_done: int
    size_seen: int
    refused: str | None


@dataclass
class Work:
    path: str
    size: int
    known: Known | None
    bytes_done: int = 0
    lines_done: int = 0
    run_id: str | None = None
    refused: str | None = None


def _list_folder(
    folder: str, seen: set[tuple[int, int]], problems: list[str]
) -> tuple[os.stat_result, list[os.DirEntry[str]]] | None:
    """A folder's status (taken before it is listed) and entries; None for a folder already
    in `seen` (a symlink loop is walked once) or one that cannot be read (one problem line)."""
    try:
        status = os.stat(folder)
        if (status.st_dev, status.st_ino) in seen:
            return None
        seen.add((status.st_dev, status.st_ino))
        with os.scandir(folder) as scan:
            return status, list(scan)
    except OSError as exc:
        problems.append(f"{folder}: cannot read this folder ({exc.strerror or exc}); skipped")
        return None


def _walk(
    folder: str, found: dict[str, int], seen: set[tuple[int, int]], problems: list[str]
) -> None:
    # os.scandir rather than Path.rglob/resolve: with thousands of traces this scan runs on
    # every command, and it must stay a few milliseconds. An unreadable entry is one
    # problem line.
    listed = _list_folder(folder, seen, problems)
    if listed is None:
        return
    for entry in sorted(listed[1], key=lambda e: e.name):
        try:
            if entry.is_dir():
                _walk(entry.path, found, seen, problems)
            elif entry.name.endswith(".jsonl") and entry.is_file():
                found[entry.path] = entry.stat().st_size
        except OSError as exc:
            problems.append(f"{entry.path}: cannot read ({exc.strerror or exc}); skipped")


def find_traces(paths: Iterable[Path | str], problems: list[str]) -> dict[str, int]:
    """The `.jsonl` files named, or found under the folders named, with their sizes."""
    found: dict[str, int] = {}
    seen: set[tuple[int, int]] = set()
    for raw in paths:
        path = os.path.realpath(Path(raw).expanduser())
        if os.path.isdir(path):
            before = len(found)
            _walk(path, found, seen, problems)
            if len(found) == before:
                problems.append(f"{raw}: no .jsonl traces in this folder")
        elif os.path.isfile(path):
            found[path] = os.path.getsize(path)
        else:
            problems.append(f"{raw}: no such file or folder")
    return found


def _known_files(cur: duckdb.DuckDBPyConnection) -> dict[str, Known]:
    rows = cur.execute(KNOWN_FILES).fetchall()
    return {row[0]: Known(*row[1:]) for row in rows}


def _changed(files: dict[str, int], known: dict[str, Known], report: IngestReport) -> list[Work]:
    work: list[Work] = []
    for name, size in files.items():
        before = known.get(name)
        if before is not None and before.size_seen == size:
            continue  # nothing new: the common case, kept cheap
        if size == 0:
            report.problems.append(f"{name}: empty trace, no events to ingest")
        work.append(Work(name, size, before))
    return work


def pending(
    cur: duckdb.DuckDBPyConnection, paths: Iterable[Path | str], report: IngestReport
) -> list[Work]:
    """The files under `paths` with something the store has not read yet."""
    return _changed(find_traces(paths, report.problems), _known_files(cur), report)


def _names(
    folder: str,
    found: list[str],
    folders: dict[str, int],
    seen: set[tuple[int, int]],
    problems: list[str],
) -> None:
    # Names only, no stat of the files: `is_dir` comes from the directory entry itself. Each
    # folder's modification time is taken before it is listed.
    listed = _list_folder(folder, seen, problems)
    if listed is None:
        return
    status, entries = listed
    folders[folder] = status.st_mtime_ns
    for entry in entries:
        if entry.name.endswith(".jsonl"):
            found.append(entry.path)  # `pending_in_folder` skips what is not a file
        else:
            with contextlib.suppress(OSError):
                if entry.is_dir():
                    _names(entry.path, found, folders, seen, problems)


def _unchanged(listing: str | None) -> bool:
    """Whether every folder of an earlier complete listing still has its modification time."""
    if not listing:
        return False
    try:
        for folder, mtime_ns in json.loads(listing).items():
            if os.stat(folder).st_mtime_ns != mtime_ns:
                return False
    except (OSError, ValueError, AttributeError):
        return False
    return True


def pending_in_folder(
    cur: duckdb.DuckDBPyConnection, folder: Path, report: IngestReport
) -> tuple[list[Work], str | None]:
    """The files under `folder` with something new, by the quick look (module docstring):
    new files, and the files of runs that have not ended (or not been read to their end).

    Also returns what to record once that work is in the store (`LISTING_SET`): the
    folders' modification times, when all are settled; else None."""
    root = os.path.realpath(folder)
    listing = (cur.execute(LISTING_GET, {"key": f"listing:{root}"}).fetchone() or (None,))[0]
    new: list[str] = []
    settled: str | None = None
    if not _unchanged(listing):
        names: list[str] = []
        folders: dict[str, int] = {}
        _names(root, names, folders, set(), report.problems)
        if folders and max(folders.values()) < time.time_ns() - SETTLED_NS:
            settled = json.dumps(folders)
        # The names go to DuckDB as one text, split there: a list of 100,000 strings costs
        # far more to pass, and 100,000 known paths far more to fetch. Paths hold no NUL.
        found = cur.execute(NEW_FILES, {"names": "\0".join(names)}).fetchall()
        new = [row[0] for row in found]
    rows = cur.execute(OPEN_FILES, {"folder": root + os.sep}).fetchall()
    known = {row[0]: Known(*row[1:]) for row in rows}
    files: dict[str, int] = {}
    for path in sorted([*new, *known]):
        try:
            status = os.stat(path)
        except OSError:
            continue  # gone since the listing: nothing to read
        if stat.S_ISREG(status.st_mode):
            files[path] = status.st_size
    return _changed(files, known, report), settled
