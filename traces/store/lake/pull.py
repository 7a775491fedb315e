"""`workbench pull`: runs from the lake into a home, as the trace files they came from.

A run's events are written to `<home>/traces/<run_id>.jsonl` in seq order, one line each,
as they were recorded; the home's store then reads them like any trace. A file already
there with as many lines or more is left alone (the run is there already); a shorter one
is replaced by the whole run, written beside it and moved into place.

The annotations on the runs (tombstones too) come along as the records they are, each to
its author's file under `<home>/annotations/` (`traces.annotations.add_annotations`, as a
bundle's import adds them), those the home holds already (by id) left out: a run already
there gets the annotations added to the lake since, and pulling again adds nothing."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from traces.annotations import Note, Removal, add_annotations, read_annotation
from traces.home import traces_dir


class Readable(Protocol):
    """What a pull reads of the lake (a `TraceStore.over_lake`)."""

    def resolve_run(self, prefix: str) -> str: ...

    def query(
        self, statement: str, params: dict[str, Any]
    ) -> tuple[list[str], list[tuple[Any, ...]]]: ...


_LINES = "SELECT event::VARCHAR FROM events WHERE run_id = $run_id ORDER BY seq"
# Each id once (`annotation_records`), as the pushing workbench read it: the current
# annotation version of that workbench.
_NOTES = """
SELECT record::VARCHAR FROM annotation_records
WHERE run_id IN (SELECT unnest($run_ids::VARCHAR[])) ORDER BY ts, id
"""


@dataclass
class PullReport:
    written: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)  # already in the home whole
    events: int = 0
    annotations: int = 0  # annotation records added to the home (tombstones too)
    unreadable: int = 0  # records a newer workbench wrote, left in the lake


def pull(lake: Readable, home: Path, refs: list[str]) -> PullReport:
    """Write the runs `refs` (ids or unique prefixes) name from `lake` into `home`."""
    report = PullReport()
    folder = traces_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    run_ids = [lake.resolve_run(ref) for ref in refs]
    for run_id in run_ids:
        _, rows = lake.query(_LINES, {"run_id": run_id})
        path = folder / f"{run_id}.jsonl"
        if path.is_file() and _line_count(path) >= len(rows):
            report.present.append(run_id)
            continue
        partial = path.with_suffix(".jsonl.pulling")
        with partial.open("w", encoding="utf-8") as out:
            out.writelines(f"{line}\n" for (line,) in rows)
        os.replace(partial, path)
        report.written.append(run_id)
        report.events += len(rows)
    records, report.unreadable = _annotations(lake, run_ids)
    report.annotations = len(add_annotations(home, records))
    return report


def _annotations(lake: Readable, run_ids: list[str]) -> tuple[list[Note | Removal], int]:
    """The lake's annotation records on `run_ids`, read against the contract, and how many
    could not be (written by a newer workbench)."""
    _, rows = lake.query(_NOTES, {"run_ids": run_ids})
    found: list[Note | Removal] = []
    for (text,) in rows:
        try:
            found.append(read_annotation(text))
        except ValueError:
            continue
    return found, len(rows) - len(found)


def _line_count(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.endswith(b"\n"))
