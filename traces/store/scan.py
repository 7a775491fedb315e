"""What ingest has to do: the trace files found, against what the store has already read.

This runs before every command that reads the store, so it stays light: the standard
library and a few queries, no event models (`traces.store.ingest` loads those, and is
imported only when something is new). Two looks:

- `pending`, the exact one (`workbench ingest PATH`): every file's size against what was
  read of it;
- `pending_in_folder`, the quick one every command takes of the home's traces: the names
  in the folder against those of the last listing (all of which the store knows), and the
  sizes of only the new files and of those whose run has not ended. A run that ended is
  not written to again, so with 100,000 runs the look still takes a few stats, not
  100,000. And when no folder under the traces has changed since a look that listed them
  all and whose files are all in the store (their modification times say so), the names
  are not even listed.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from traces.home import ANNOTATIONS_FOLDER, TRACES_FOLDER
from traces.store.db import duckdb
from traces.store.sql import (
    KNOWN_FILES,
    LISTING_GET,
    LISTING_SET,
    NAMES_GET,
    NAMES_SET,
    NEW_FILES,
    OPEN_FILES,
)

T = TypeVar("T")

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
    # How ingest reads it (`traces.store.ingest`): whole through DuckDB's reader, or line by
    # line; whether its old rows go first (the file was replaced); its schema version.
    bulk: bool = False
    restart: bool = False
    version: int | None = None


def _list_folder(
    folder: str,
    seen: set[tuple[int, int]],
    problems: list[str],
    entries: Callable[[str], list[T]],
) -> tuple[os.stat_result, list[T]] | None:
    """A folder's status (taken before it is listed) and `entries`; None for a folder
    already in `seen` (a symlink loop is walked once) or one that cannot be read (one
    problem line)."""
    try:
        status = os.stat(folder)
        if (status.st_dev, status.st_ino) in seen:
            return None
        seen.add((status.st_dev, status.st_ino))
        return status, entries(folder)
    except OSError as exc:
        problems.append(f"{folder}: cannot read this folder ({exc.strerror or exc}); skipped")
        return None


def _scandir(folder: str) -> list[os.DirEntry[str]]:
    with os.scandir(folder) as scan:
        return list(scan)


def _walk(
    folder: str, found: dict[str, int], seen: set[tuple[int, int]], problems: list[str]
) -> None:
    # os.scandir rather than Path.rglob/resolve: with thousands of traces this scan runs on
    # every command, and it must stay a few milliseconds. An unreadable entry is one
    # problem line.
    listed = _list_folder(folder, seen, problems, _scandir)
    if listed is None:
        return
    for entry in sorted(listed[1], key=lambda e: e.name):
        try:
            if entry.is_dir():
                if not _annotations_of_a_home(folder, entry.name):
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
    prefix: str,
    found: list[str],
    folders: dict[str, int],
    seen: set[tuple[int, int]],
    problems: list[str],
) -> None:
    # Names only, relative to the traces folder (`prefix` is this folder's), and no stat of
    # the files: os.listdir makes no object per entry (a fifth cheaper than os.scandir with
    # 100,000 runs), so only the few names that are not traces are looked at, to find the
    # subfolders. Each folder's modification time is taken before it is listed.
    listed = _list_folder(folder, seen, problems, os.listdir)
    if listed is None:
        return
    status, names = listed
    folders[folder] = status.st_mtime_ns
    for name in names:
        if name.endswith(".jsonl"):
            found.append(prefix + name)  # `pending_in_folder` skips what is not a file
            continue
        path = os.path.join(folder, name)
        try:
            is_folder = stat.S_ISDIR(os.stat(path).st_mode)
        except FileNotFoundError:
            continue  # gone since, or a link to nothing
        except OSError as exc:  # as `_walk` says it
            problems.append(f"{path}: cannot read ({exc.strerror or exc}); skipped")
            continue
        if is_folder and not _annotations_of_a_home(folder, name):
            _names(path, f"{prefix}{name}{os.sep}", found, folders, seen, problems)


def _annotations_of_a_home(folder: str, name: str) -> bool:
    """Whether `folder`/`name` is a home's annotations (a home given to `ingest` whole):
    its notes are read as annotations, never as traces."""
    return name == ANNOTATIONS_FOLDER and os.path.isdir(os.path.join(folder, TRACES_FOLDER))


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


def _one(cur: duckdb.DuckDBPyConnection, statement: str, params: dict[str, str]) -> str | None:
    row = cur.execute(statement, params).fetchone()
    return row[0] if row else None


@dataclass
class Listing:
    """What a quick look keeps for the next one, recorded once its work is in the store."""

    root: str
    # Both only from a listing of every folder: the folders' modification times when all
    # are settled, and the names that are files when they differ enough (below).
    folders: str | None = None
    names: str | None = None

    def record(self, cur: duckdb.DuckDBPyConnection) -> None:
        if self.folders is not None:
            cur.execute(LISTING_SET, {"key": f"listing:{self.root}", "value": self.folders})
        if self.names is not None:
            cur.execute(NAMES_SET, {"folder": self.root, "names": self.names})


# The names kept are rewritten once this share of them changed (files added or removed
# since): writing 100,000 names costs 10 ms, looking up a few hundred new ones a few.
_NAMES_DRIFT = 1 / 64


def pending_in_folder(
    cur: duckdb.DuckDBPyConnection, folder: Path, report: IngestReport
) -> tuple[list[Work], Listing]:
    """The files under `folder` with something new, by the quick look (module docstring):
    new files, and the files of runs that have not ended (or not been read to their end);
    and what to keep of the listing for the next look (`Listing.record`)."""
    root = os.path.realpath(folder)
    prefix = os.path.join(root, "")
    listing = Listing(root)
    listed = not _unchanged(_one(cur, LISTING_GET, {"key": f"listing:{root}"}))
    names: list[str] = []
    kept: set[str] = set()
    others: list[str] = []  # names not kept from an earlier listing
    new: list[str] = []  # paths of those the store does not know
    complete = True  # every folder listed
    if listed:
        folders: dict[str, int] = {}
        problems_before = len(report.problems)
        _names(root, "", names, folders, set(), report.problems)
        complete = len(report.problems) == problems_before
        if complete and folders and max(folders.values()) < time.time_ns() - SETTLED_NS:
            listing.folders = json.dumps(folders)
        # Every name kept from an earlier listing is a file the store knows (one that was
        # not a file is left out), so only the other names are looked up in the store: a
        # few, where looking up all 100,000 costs 60-100 ms and comparing them with the
        # names kept 20 ms. The names go to DuckDB as one text, split there: a list of
        # strings costs far more to pass. Paths hold no NUL.
        kept_text = _one(cur, NAMES_GET, {"folder": root})
        kept = set(kept_text.split("\0")) if kept_text else set()
        others = [name for name in names if name not in kept]
        if others:
            paths = "\0".join(prefix + name for name in others)
            new = [row[0] for row in cur.execute(NEW_FILES, {"names": paths}).fetchall()]
    rows = cur.execute(OPEN_FILES, {"folder": prefix}).fetchall()
    known = {row[0]: Known(*row[1:]) for row in rows}
    files: dict[str, int] = {}
    for path in sorted([*new, *known]):
        try:
            status = os.stat(path)
        except OSError:
            continue  # gone since the listing: nothing to read
        if stat.S_ISREG(status.st_mode):
            files[path] = status.st_size
    if listed and complete:
        not_files = {path[len(prefix) :] for path in new if path not in files}
        added = len(others) - len(not_files)
        removed = len(kept) - (len(names) - len(others))
        if added + removed > len(kept) * _NAMES_DRIFT:
            listing.names = "\0".join(n for n in names if n not in not_files)
    return _changed(files, known, report), listing
