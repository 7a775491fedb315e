"""Annotations into the store: `<home>/annotations/*.jsonl` read like the traces are.

The same machinery finds what is new (`scan.find_traces`, a file's size against how far it
was read) and reads only the new whole lines of each file (`ingest_batch._next_piece`: a
cut-off last line waits, a file that shrank is read again from its start). Each line is
checked against the annotation contract (`traces.annotations.read_annotation`, migrating
older versions); the lines go in set-based through DuckDB's own JSON reader, a refused one
as a row with its reason, reported once as `file:line: why`, the rest kept. Reading again
adds nothing: `annotation_files` says how far each file was read.

Light to import: pydantic and the models load only when some file has something new.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from traces.store import notes_sql as sql
from traces.store.db import duckdb
from traces.store.scan import IngestReport, Known, Work, find_traces

# How much of an annotations file is read at a time.
_PIECE_BYTES = 16 << 20


def pending_annotations(cur: duckdb.DuckDBPyConnection, folder: Path) -> list[Work]:
    """The annotation files under `folder` with something the store has not read."""
    try:
        if not any(name.endswith(".jsonl") for name in os.listdir(folder)):
            return []
    except OSError:
        return []  # no annotations folder: nothing annotated yet
    problems: list[str] = []
    files = find_traces([folder], problems)
    known = {row[0]: Known(*row[1:]) for row in cur.execute(sql.KNOWN_ANNOTATION_FILES).fetchall()}
    return [
        Work(path, size, known.get(path))
        for path, size in files.items()
        if path not in known or known[path].size_seen != size
    ]


def ingest_annotations(cur: duckdb.DuckDBPyConnection, folder: Path, report: IngestReport) -> int:
    """Read what is new in the annotation files under `folder`, in one transaction;
    problems go to `report`. Returns how many records were added."""
    work = pending_annotations(cur, folder)
    if not work:
        return 0
    from traces.store.ingest_batch import _next_piece  # the traces' reader of whole lines

    lines: list[dict[str, Any]] = []
    for item in work:
        known = item.known
        if known is not None and item.size >= known.bytes_done:
            item.bytes_done, item.lines_done = known.bytes_done, known.lines_done
        else:
            item.restart = known is not None  # it shrank: replaced, read again whole
        try:
            while True:
                piece = _next_piece(item, _PIECE_BYTES, report.problems)
                _check_lines(item, piece.lines, lines, report.problems)
                item.bytes_done += len(piece.lines)
                if not piece.more or not piece.lines:
                    break
        except OSError as exc:
            report.problems.append(f"{item.path}: cannot read ({exc.strerror or exc}); skipped")
    cur.execute("BEGIN TRANSACTION")
    try:
        for item in work:
            if item.restart:
                cur.execute(sql.DELETE_ANNOTATION_PATH, {"path": item.path})
        if lines:
            with tempfile.TemporaryDirectory(prefix="workbench-notes-") as scratch:
                copy = Path(scratch) / "lines.jsonl"
                with copy.open("w", encoding="utf-8") as handle:
                    for line in lines:
                        handle.write(json.dumps(line, ensure_ascii=False) + "\n")
                cur.execute(sql.INSERT_ANNOTATION_LINES, {"file": str(copy)})
        cur.execute(
            sql.UPSERT_ANNOTATION_FILES,
            {
                "path": [item.path for item in work],
                "bytes_done": [item.bytes_done for item in work],
                "lines_done": [item.lines_done for item in work],
                "size_seen": [item.size for item in work],
            },
        )
        cur.execute("COMMIT")
    except BaseException:
        cur.execute("ROLLBACK")
        raise
    return sum(1 for line in lines if line["problem"] is None)


def _check_lines(item: Work, whole: bytes, out: list[dict[str, Any]], problems: list[str]) -> None:
    """Each whole line of `whole` checked against the contract, as a row for the store."""
    from pydantic import ValidationError

    from traces.annotations import read_annotation
    from traces.line_check import describe_validation_error

    for raw in whole.split(b"\n")[:-1]:
        item.lines_done += 1
        text = raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace")
        if not text.strip():
            continue
        row: dict[str, Any] = {"path": item.path, "line_no": item.lines_done}
        try:
            record = read_annotation(text)
        except ValidationError as exc:
            row |= {"record": None, "problem": describe_validation_error(exc)}
        except ValueError as exc:
            row |= {"record": None, "problem": str(exc) or "not valid JSON"}
        else:
            row |= {"record": record.model_dump(mode="json"), "problem": None}
        if row["problem"] is not None:
            problems.append(f"{item.path}:{item.lines_done}: {row['problem']}; line skipped")
        out.append(row)


def run_annotations(cur: duckdb.DuckDBPyConnection, run_id: str | None) -> list[dict[str, Any]]:
    """The annotations that count on a run (every run's for None), oldest first."""
    result = cur.execute(sql.RUN_ANNOTATIONS, {"run_id": run_id})
    columns = [column[0] for column in result.description or ()]
    rows = [dict(zip(columns, row, strict=True)) for row in result.fetchall()]
    for row in rows:
        row["scores"] = json.loads(row["scores"]) if row["scores"] else {}
        row["ts"] = row["ts"].isoformat() if row["ts"] is not None else None
    return rows
