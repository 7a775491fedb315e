"""One batch of ingest (`traces.store.ingest` sizes the batches and commits each): its
files' new lines read into `event_rows`, set-based, by one of two paths:

- bulk: whole new files go straight through `read_ndjson_objects`. Bulk rows have no line
  numbers, so a bulk file is kept only when every line of it went in cleanly;
- careful: the next whole lines of a grown or big file, a file with a cut-off last line,
  and a bulk file that did not go in cleanly (a refused line, a blank line, lines of
  several runs, a repeated seq, another schema version) are copied to a scratch file and
  read line by line with exact line numbers.

Every line read lands in `event_rows`, with `problem` set when it is refused; the checks
that need more than one line (run ownership, duplicate seq, schema version) run afterwards
on the batch. A cut-off last line is not consumed: it is read once the writer completes it.
"""

from __future__ import annotations

import io
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_core import ValidationError

from traces.line_check import (
    LINE_MAX,
    STEP,
    check_line,
    check_lines,
    loads,
    long_line_problem,
    repeated_key,
)
from traces.store import ingest_sql as sql
from traces.store.db import duckdb
from traces.store.scan import Work
from traces.store.sql import NEXT_BATCH
from traces.versions import SCHEMA_VERSION, NewerSchemaError, declared_version

# Bulk files are checked for repeated seqs with a bitmap of this many seqs per file (see
# BULK_FILE_STATS); 4096 bits is 512 bytes a file.
_SEQ_BITS = 4096


def _reads_cleanly(path: str, size: int) -> bool:
    """Whether every line of a whole new file is one the reader accepts as it stands (no
    blank line, no byte order mark, a valid event), so it can take the bulk path; any
    doubt sends it to the careful path, which finds and reports each bad line."""
    # A bare descriptor: with 100,000 new files, a file object each costs a second.
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            data = os.read(fd, size)
        finally:
            os.close(fd)
    except OSError:
        return False  # the careful path reports it
    if not data.endswith(b"\n"):  # a cut-off last line: read once the writer ends it
        return False
    for line in data.split(b"\n")[:-1]:
        if not line.strip() or line.startswith((b"\xef\xbb\xbf", b"\x1e")):
            return False
        if repeated_key(line) is not None:
            return False
        try:
            check_line(line)
        except ValidationError:
            return False
    return True


def read_batch(
    cur: duckdb.DuckDBPyConnection,
    items: list[Work],
    scratch: Path,
    problems: list[str],
    piece_bytes: int,
) -> list[Work]:
    """Read one batch of files into the store, in the caller's transaction: all of each
    bulk file, and up to `piece_bytes` of whole new lines of each careful one; returns the
    careful files with more whole lines to read after this batch."""
    batch = (cur.execute(NEXT_BATCH).fetchone() or (1,))[0]
    for item in items:
        if item.restart:  # the file was replaced: its old rows go
            cur.execute(sql.DELETE_PATH_ROWS, {"path": item.path})
            item.restart = False
    # (path, run id, lowest and highest run id of its lines, schema version, run_start line)
    file_runs: list[tuple[Any, ...]] = []
    careful = [item for item in items if not item.bulk]
    bulk = [item for item in items if item.bulk]
    if bulk:
        careful += _read_in_bulk(cur, bulk, batch, file_runs)
    more: list[Work] = []
    if careful:
        more = _read_carefully(cur, careful, batch, scratch, problems, piece_bytes)
        file_runs += cur.execute(sql.BATCH_FILE_RUNS, {"batch": batch}).fetchall()

    _check_files(cur, items, batch, file_runs, problems)
    cur.execute(sql.MARK_DUPLICATE_SEQ, {"batch": batch})
    for path, line, problem in cur.execute(sql.BATCH_PROBLEMS, {"batch": batch}).fetchall():
        problems.append(f"{path}:{line}: {problem}")
    record_files(cur, items)
    cur.execute(sql.TOUCHED, {"batch": batch})
    cur.execute(sql.DELETE_TOUCHED_RUNS)
    cur.execute(sql.INSERT_TOUCHED_RUNS)
    cur.execute(sql.SESSION_ROOTS)
    return [item for item in more if item.refused is None]


def record_files(cur: duckdb.DuckDBPyConnection, items: list[Work]) -> None:
    """How far each file is read, and what size it had when looked at."""
    # One list per column: DuckDB takes lists of plain values far faster than of dicts.
    files = {
        "path": [item.path for item in items],
        "run_id": [item.run_id for item in items],
        "bytes_done": [item.bytes_done for item in items],
        "lines_done": [item.lines_done for item in items],
        "size_seen": [item.size for item in items],
        "refused": [item.refused for item in items],
    }
    cur.execute(sql.UPSERT_FILES, files)


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
    problems: list[str],
    piece_bytes: int,
) -> list[Work]:
    """The next whole lines of each file (up to `piece_bytes` of them), checked line by
    line in Python with the reader's own `check_lines` and copied (BOM dropped, invalid
    UTF-8 replaced, older schema versions migrated) to a scratch file that DuckDB reads
    with exact line numbers. The reader's verdict is the one that counts: DuckDB's checks
    only add reasons, so the store admits exactly the lines the reader can read back.
    Returns the files with more whole lines after the piece read."""
    files: list[str] = []
    mapping: list[dict[str, Any]] = []
    verdicts: list[_Verdicts] = []
    more: list[Work] = []
    for number, item in enumerate(items):
        try:
            piece = _next_piece(item, piece_bytes, problems)
        except OSError as exc:
            problems.append(f"{item.path}: cannot read ({exc.strerror or exc}); skipped")
            continue
        if piece.more:
            more.append(item)
        if not piece.lines:
            continue
        checked = _check_whole_lines(item, piece.lines, problems)
        if checked is None:
            continue
        # Long lines go in one at a time (`_insert_long_lines`); a blank line keeps their
        # place in the scratch file.
        texts = [text if len(text) <= LONG_LINE else "" for text in checked.texts]
        copy = scratch / f"{batch}-{number}.jsonl"
        copy.write_text("\n".join(texts) + "\n", encoding="utf-8")
        files.append(str(copy))
        mapping.append({"read_path": str(copy), "path": item.path, "line_base": item.lines_done})
        verdicts.append(checked)
        item.bytes_done += len(piece.lines)
        item.lines_done += len(checked.texts)
    if files:
        cur.execute(sql.INSERT_LINES, {"files": files, "map": mapping, "batch": batch})
        _insert_long_lines(cur, batch, verdicts)
        _apply_verdicts(cur, batch, verdicts)
        for name in files:
            os.unlink(name)
    return more


@dataclass
class _Piece:
    lines: bytes  # whole lines, each ending in a newline
    more: bool  # whether whole lines may follow it in the file


def _next_piece(item: Work, piece_bytes: int, problems: list[str]) -> _Piece:
    """The whole lines of `item` from where it was read to, `piece_bytes` of them at
    most, or one line if that is longer (up to LINE_MAX); only the size the scan saw is
    read, so what a writer adds meanwhile waits for the next look. A line over LINE_MAX
    is skipped with a problem; a cut-off last line is reported and left for later."""
    end = item.size
    with open(item.path, "rb") as handle:
        handle.seek(item.bytes_done)
        data = handle.read(min(piece_bytes, end - item.bytes_done))
        if not data:
            return _Piece(b"", more=False)
        cut = data.rfind(b"\n") + 1
        at_end = item.bytes_done + len(data) >= end
        if cut:
            long = _long_line_cut(data, cut)
            if long < cut:
                return _Piece(data[:long], more=True)
            if at_end and cut < len(data):
                _cut_off(item, item.lines_done + data.count(b"\n", 0, cut) + 1, problems)
            return _Piece(data[:cut], more=not at_end)
        # No line ends in the piece: one line longer than a piece, or a cut-off last line.
        parts, length = [data], len(data)
        while not at_end:
            step = handle.read(min(STEP, end - item.bytes_done - length))
            if not step:
                break
            newline = step.find(b"\n")
            if newline >= 0:
                length += newline + 1
                if length - 1 > LINE_MAX:
                    item.bytes_done += length
                    item.lines_done += 1
                    problems.append(long_line_problem(item.path, item.lines_done, length - 1))
                    return _Piece(b"", more=item.bytes_done < end)
                parts.append(step[: newline + 1])
                return _Piece(b"".join(parts), more=item.bytes_done + length < end)
            length += len(step)
            at_end = item.bytes_done + length >= end
            if length <= LINE_MAX:
                parts.append(step)
            else:
                parts = []  # over the limit: only its end is looked for now
    _cut_off(item, item.lines_done + 1, problems)
    return _Piece(b"", more=False)


def _long_line_cut(data: bytes, cut: int) -> int:
    """Where a piece of whole lines `data[:cut]` ends so that a long line is a piece of its
    own: then DuckDB failing on it (`LongLineError`) names it and loses no other line."""
    if cut <= LONG_LINE:
        return cut
    start = 0
    while start < cut:
        end = data.index(b"\n", start) + 1
        if end - start - 1 > LONG_LINE:
            return start if start else end
        start = end
    return cut


def _cut_off(item: Work, line: int, problems: list[str]) -> None:
    problems.append(
        f"{item.path}:{line}: last line is cut off (the run may still be writing); "
        "it is read once complete"
    )


def _file_version(item: Work) -> int:
    """The schema version of a file read before: its run_start's, which is its first line
    (a file without one is of the current version)."""
    with open(item.path, "rb") as handle:
        first = handle.readline(LINE_MAX)
    try:
        record = loads(first)
    except ValueError:
        return SCHEMA_VERSION
    version = declared_version(record) if isinstance(record, dict) else None
    return version if version is not None else SCHEMA_VERSION


# Lines longer than this are inserted one at a time with the values the reader read:
# DuckDB's set-based read of a line takes about fifteen times its size, one at a time about
# four times (a 128 MiB line fits in INGEST_MEMORY_LIMIT).
LONG_LINE = 4 << 20


def _insert_long_lines(
    cur: duckdb.DuckDBPyConnection, batch: int, verdicts: list[_Verdicts]
) -> None:
    for verdict in verdicts:
        for offset, text in enumerate(verdict.texts):
            if len(text) <= LONG_LINE:
                continue
            from traces.reader import validate_line  # rare: only here are events built

            line_no = verdict.line_base + offset + 1
            row: dict[str, Any] = dict.fromkeys(("run_id", "seq", "type", "turn", "ts"))
            problem = verdict.refused.get(line_no)
            if problem is None:
                event = validate_line(text)
                row = {"run_id": event.run_id, "seq": event.seq, "type": event.type}
                row |= {"turn": event.turn, "ts": event.ts}
            try:
                cur.execute(
                    sql.INSERT_LONG_LINE,
                    row
                    | {"event": text, "path": verdict.path, "nbytes": len(text.encode())}
                    | {"line_no": line_no, "batch": batch, "problem": problem},
                )
            except duckdb.Error as exc:
                raise LongLineError(verdict.path, line_no, exc) from None


class LongLineError(Exception):
    """DuckDB could not take one long line; it is a piece of its own (`_long_line_cut`)."""

    def __init__(self, path: str, line_no: int, cause: duckdb.Error) -> None:
        super().__init__(f"{path}:{line_no}: {cause}")
        self.path, self.line_no, self.cause = path, line_no, cause


@dataclass
class _Verdicts:
    """What the reader made of a file's new lines: each line's stored text (blank for a
    blank line), and the line numbers it refused, with why."""

    path: str
    line_base: int
    texts: list[str]
    refused: dict[int, str]


def _check_whole_lines(item: Work, whole: bytes, problems: list[str]) -> _Verdicts | None:
    texts = [""] * whole.count(b"\n")
    refused: dict[int, str] = {}
    if item.version is None:
        item.version = _file_version(item) if item.lines_done else SCHEMA_VERSION
    try:
        lines = check_lines(io.BytesIO(whole), check_line, item.lines_done + 1, item.version)
        for line in lines:
            texts[line.number - item.lines_done - 1] = line.text
            if line.problem is not None:
                refused[line.number] = line.problem
            elif line.schema_version is not None:
                item.version = line.schema_version  # the later pieces are of its version
    except NewerSchemaError as exc:
        item.refused = f"{exc.line}: {exc.reason}"
        problems.append(f"{item.path}:{item.refused}")
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
    problems: list[str],
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
            problems.append(f"{path}:{refusal}")
            continue
        owners[run_id] = path
        item.run_id = run_id
        if lowest != run_id or highest != run_id:  # some lines name another run
            claimed.append({"path": path, "run_id": run_id})
    if claimed:
        cur.execute(sql.MARK_FOREIGN_RUN_IDS, {"batch": batch, "files": claimed})
