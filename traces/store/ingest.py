"""Bulk, incremental, idempotent ingest of `.jsonl` traces into the store.

Python only decides what to read (`traces.store.scan` finds what is new: sizes against what
is already ingested); DuckDB reads, validates and inserts, set-based. Two paths:

- bulk: a new file that ends in a whole line goes straight through `read_ndjson_objects`,
  the fast path that carries most data. Bulk rows have no line numbers, so a bulk file
  is kept only when every line of it went in cleanly;
- careful: the new whole lines of a grown file, a file with a cut-off last line, and a
  bulk file that did not go in cleanly (a refused line, a blank line, lines of several
  runs, a repeated seq, another schema version) are copied to a scratch file and read
  line by line with exact line numbers.

Every line read lands in `event_rows`, with `problem` set when it is refused; the checks
that need more than one line (run ownership, duplicate seq, schema version) run afterwards
on the batch. A cut-off last line is not consumed: it is read once the writer completes it.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_core import ValidationError

from traces.line_check import check_line, check_lines
from traces.store import ingest_sql as sql
from traces.store.db import duckdb
from traces.store.progress import Progress, Watch
from traces.store.scan import IngestReport, Work
from traces.store.sql import NEXT_BATCH
from traces.versions import SCHEMA_VERSION, NewerSchemaError

# Bulk files are checked for repeated seqs with a bitmap of this many seqs per file (see
# BULK_FILE_STATS); 4096 bits is 512 bytes a file.
_SEQ_BITS = 4096


def _files(count: int, noun: str = "file") -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _ends_with_newline(path: str, size: int) -> bool:
    # os.pread on a bare descriptor: with 100,000 new files, a file object each costs seconds.
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False  # the careful path reports it
    try:
        return os.pread(fd, 1, size - 1) == b"\n"
    except OSError:
        return False
    finally:
        os.close(fd)


def _reads_cleanly(path: str, size: int) -> bool:
    """Whether every line of a whole new file is one the reader accepts as it stands (no
    blank line, no byte order mark, a valid event), so it can take the bulk path; any
    doubt sends it to the careful path, which finds and reports each bad line."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(size)
    except OSError:
        return False  # the careful path reports it
    if not data.endswith(b"\n"):
        return False
    for line in data.split(b"\n")[:-1]:
        if not line.strip() or line.startswith((b"\xef\xbb\xbf", b"\x1e")):
            return False
        try:
            check_line(line)
        except ValidationError:
            return False
    return True


def ingest_work(
    cur: duckdb.DuckDBPyConnection,
    work: list[Work],
    report: IngestReport,
    progress: Progress | None = None,
) -> IngestReport:
    """Read the new part of each file `pending` found into the store, in one transaction;
    `progress` hears how far it is (`traces.store.progress`)."""
    if not work:
        return report
    runs_before = cur.execute("SELECT count(*) FROM runs").fetchone()
    events_before = cur.execute("SELECT count(*) FROM events").fetchone()
    # Rows may land in any order (keeping it costs a third of a bulk insert): a bulk row's
    # position is never read, and the careful path numbers its lines itself.
    cur.execute("SET SESSION preserve_insertion_order = false")
    memory_limit = _lower_memory_limit(cur)
    cur.execute("BEGIN TRANSACTION")
    try:
        with (
            tempfile.TemporaryDirectory(prefix="workbench-ingest-") as scratch,
            Watch(cur, progress).running() as watch,
        ):
            _ingest_batch(cur, work, Path(scratch), report, watch)
            # Shares of the whole, from a rebuild of 100,000 runs: reading is most of it.
            watch.step(f"writing the store ({_files(len(work))})", 0.05)
            cur.execute("COMMIT")
    except BaseException:
        # A failed COMMIT (a full disk) may already have ended the transaction; the error
        # that matters is the first one.
        with contextlib.suppress(duckdb.Error):
            cur.execute("ROLLBACK")
        raise
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


# DuckDB's memory while ingesting, at most: a rebuild of 100,000 runs peaks at 1.2 GB of
# RSS under it instead of 1.7 GB under DuckDB's default (80% of RAM), in the same time;
# a bigger one spills to DuckDB's temp directory, next to the store.
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


def _ingest_batch(
    cur: duckdb.DuckDBPyConnection,
    work: list[Work],
    scratch: Path,
    report: IngestReport,
    watch: Watch,
) -> None:
    batch = (cur.execute(NEXT_BATCH).fetchone() or (1,))[0]
    bulk: list[Work] = []
    careful: list[Work] = []
    for item in work:
        if item.known is not None and item.size < item.known.bytes_done:
            # Shorter than what was ingested: the file was replaced, so start it over.
            cur.execute(sql.DELETE_PATH_ROWS, {"path": item.path})
            item.known = None
        if item.known is not None:
            item.bytes_done, item.lines_done = item.known.bytes_done, item.known.lines_done
            item.run_id = item.known.run_id
            if item.known.refused:
                item.refused = item.known.refused
                continue
        if item.size == 0:
            continue
        if item.known is None and _ends_with_newline(item.path, item.size):
            bulk.append(item)
        else:
            careful.append(item)

    # (path, run id, lowest and highest run id of its lines, schema version, run_start line)
    file_runs: list[tuple[Any, ...]] = []
    watch.step(f"reading {_files(len(work), 'trace file')}", 0.8)
    if bulk:
        careful += _read_in_bulk(cur, bulk, batch, file_runs)
    if careful:
        _read_carefully(cur, careful, batch, scratch, report)
        file_runs += cur.execute(sql.BATCH_FILE_RUNS, {"batch": batch}).fetchall()

    _check_files(cur, work, batch, file_runs, report)
    cur.execute(sql.MARK_DUPLICATE_SEQ, {"batch": batch})
    for path, line, problem in cur.execute(sql.BATCH_PROBLEMS, {"batch": batch}).fetchall():
        report.problems.append(f"{path}:{line}: {problem}")
    watch.step(f"summing up runs ({_files(len(work))})", 0.15)
    # One list per column: DuckDB takes lists of plain values far faster than of dicts.
    files = {
        "path": [item.path for item in work],
        "run_id": [item.run_id for item in work],
        "bytes_done": [item.bytes_done for item in work],
        "lines_done": [item.lines_done for item in work],
        "size_seen": [item.size for item in work],
        "refused": [item.refused for item in work],
    }
    cur.execute(sql.UPSERT_FILES, files)
    cur.execute(sql.DELETE_TOUCHED_RUNS, {"batch": batch})
    cur.execute(sql.INSERT_TOUCHED_RUNS, {"batch": batch})


def _read_in_bulk(
    cur: duckdb.DuckDBPyConnection, items: list[Work], batch: int, file_runs: list[tuple[Any, ...]]
) -> list[Work]:
    """Whole new files straight through DuckDB's reader; returns those to re-read carefully
    and adds the run of each file kept to `file_runs`."""
    # The reader's own check of each file runs beside DuckDB's insert (which lets go of the
    # GIL), so checking every line costs little time on top of the insert itself.
    with ThreadPoolExecutor(max_workers=1) as pool:
        doubtful = pool.submit(
            lambda: {item.path for item in items if not _reads_cleanly(item.path, item.size)}
        )
        cur.execute(sql.INSERT_BULK, {"files": [item.path for item in items], "batch": batch})
        rows = cur.execute(sql.BULK_FILE_STATS, {"batch": batch, "bits": _SEQ_BITS}).fetchall()
        refused_by_reader = doubtful.result()
    stats = {row[0]: row[1:] for row in rows}
    # Files with lines past the seq bitmap get all their seqs counted exactly instead.
    long = [path for path, row in stats.items() if row[4]]
    if long:
        exact = dict(cur.execute(sql.LONG_FILE_SEQS, {"batch": batch, "paths": long}).fetchall())
        for path in long:
            count, nbytes, clean, _, _, run_id = stats[path]
            stats[path] = (count, nbytes, clean, exact[path], 0, run_id)
    again: list[Work] = []
    for item in items:
        count, nbytes, clean, seqs, beyond, run_id = stats.get(item.path, (0, 0, False, 0, 0, None))
        if (
            clean
            and seqs + beyond == count
            and nbytes == item.size
            and (item.path not in refused_by_reader)
        ):
            item.bytes_done, item.lines_done = item.size, count
            file_runs.append((item.path, run_id, run_id, run_id, None, None))
        else:
            again.append(item)
    if again:
        paths = [item.path for item in again]
        cur.execute(sql.DELETE_FILES_ROWS, {"batch": batch, "paths": paths})
    return again


def _read_carefully(
    cur: duckdb.DuckDBPyConnection,
    items: list[Work],
    batch: int,
    scratch: Path,
    report: IngestReport,
) -> None:
    """The new whole lines of each file, checked line by line in Python with the reader's
    own `check_lines` and copied (BOM dropped, invalid UTF-8 replaced, older schema versions
    migrated) to a scratch file that DuckDB reads with exact line numbers. The reader's
    verdict is the one that counts: DuckDB's checks only add reasons, so the store admits
    exactly the lines the reader can read back."""
    files: list[str] = []
    mapping: list[dict[str, Any]] = []
    verdicts: list[_Verdicts] = []
    for number, item in enumerate(items):
        try:
            with open(item.path, "rb") as handle:
                handle.seek(item.bytes_done)
                data = handle.read(item.size - item.bytes_done)
        except OSError as exc:
            report.problems.append(f"{item.path}: cannot read ({exc.strerror or exc}); skipped")
            continue
        whole = data[: data.rfind(b"\n") + 1]
        if len(whole) < len(data):
            line = item.lines_done + whole.count(b"\n") + 1
            report.problems.append(
                f"{item.path}:{line}: last line is cut off (the run may still be writing); "
                "it is read once complete"
            )
        if not whole:
            continue
        checked = _check_whole_lines(item, whole, report)
        if checked is None:
            continue
        copy = scratch / f"{number}.jsonl"
        copy.write_text("\n".join(checked.texts) + "\n", encoding="utf-8")
        files.append(str(copy))
        mapping.append({"read_path": str(copy), "path": item.path, "line_base": item.lines_done})
        verdicts.append(checked)
        item.bytes_done += len(whole)
        item.lines_done += len(checked.texts)
    if files:
        cur.execute(sql.INSERT_LINES, {"files": files, "map": mapping, "batch": batch})
        _apply_verdicts(cur, batch, verdicts)


@dataclass
class _Verdicts:
    """What the reader made of a file's new lines: each line's stored text (blank for a
    blank line), and the line numbers it refused, with why."""

    path: str
    line_base: int
    texts: list[str]
    refused: dict[int, str]


def _check_whole_lines(item: Work, whole: bytes, report: IngestReport) -> _Verdicts | None:
    texts = [""] * whole.count(b"\n")
    refused: dict[int, str] = {}
    try:
        for line in check_lines(io.BytesIO(whole), check_line, item.lines_done + 1):
            texts[line.number - item.lines_done - 1] = line.text
            if line.problem is not None:
                refused[line.number] = line.problem
    except NewerSchemaError as exc:
        item.refused = f"{exc.line}: {exc.reason}"
        report.problems.append(f"{item.path}:{item.refused}")
        return None
    return _Verdicts(item.path, item.lines_done, texts, refused)


def _apply_verdicts(cur: duckdb.DuckDBPyConnection, batch: int, verdicts: list[_Verdicts]) -> None:
    """Lines the reader refused are refused in the store too; lines only DuckDB refused (a
    time it parses differently) are admitted with the values the reader read."""
    refused = [
        {"path": v.path, "line_no": line_no, "problem": problem}
        for v in verdicts
        for line_no, problem in v.refused.items()
    ]
    if refused:
        cur.execute(sql.REFUSE_LINES, {"batch": batch, "lines": refused})
    by_path = {v.path: v for v in verdicts}
    admitted: list[dict[str, Any]] = []
    for path, line_no in cur.execute(sql.BATCH_REFUSED_LINES, {"batch": batch}).fetchall():
        verdict = by_path.get(path)
        if verdict is None or line_no in verdict.refused:
            continue
        from traces.reader import validate_line  # rare: only here are events built

        event = validate_line(verdict.texts[line_no - verdict.line_base - 1])
        admitted.append(
            {
                "path": path,
                "line_no": line_no,
                "run_id": event.run_id,
                "seq": event.seq,
                "type": event.type,
                "turn": event.turn,
                "ts": event.ts,
            }
        )
    if admitted:
        cur.execute(sql.ADMIT_LINES, {"batch": batch, "lines": admitted})


def _check_files(
    cur: duckdb.DuckDBPyConnection,
    work: list[Work],
    batch: int,
    file_runs: list[tuple[Any, ...]],
    report: IngestReport,
) -> None:
    """File-level rules: one run per file, one file per run, no newer schema version."""
    by_path = {item.path: item for item in work}
    # Only the runs of this batch: the store may know 100,000 others.
    runs = sorted({by_path[row[0]].run_id or row[1] for row in file_runs} - {None})
    owners = dict(
        cur.execute(
            "SELECT run_id, min(path) FROM trace_files WHERE refused IS NULL "
            "AND run_id IN (SELECT unnest($runs)) GROUP BY run_id",
            {"runs": runs},
        ).fetchall()
    )
    claimed: list[dict[str, str]] = []
    for path, run_id, lowest, highest, version, start_line in sorted(file_runs):
        item = by_path[path]
        run_id = item.run_id or run_id
        refusal = None
        if isinstance(version, int) and version > SCHEMA_VERSION:
            refusal = f"{start_line}: {NewerSchemaError(path, version).reason}"
        elif owners.get(run_id, path) != path:
            refusal = f"1: run {run_id} is already ingested from {owners[run_id]}; skipped"
        if refusal is not None:
            cur.execute(sql.DELETE_FILES_ROWS, {"batch": batch, "paths": [path]})
            item.refused = refusal
            report.problems.append(f"{path}:{refusal}")
            continue
        owners[run_id] = path
        item.run_id = run_id
        if lowest != run_id or highest != run_id:  # some lines name another run
            claimed.append({"path": path, "run_id": run_id})
    if claimed:
        cur.execute(sql.MARK_FOREIGN_RUN_IDS, {"batch": batch, "files": claimed})
