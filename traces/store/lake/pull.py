"""`workbench pull`: runs from the lake into a home, as the trace files they came from.

A run's events are written to `<home>/traces/<run_id>.jsonl` in seq order, one line each,
as they were recorded; the home's store then reads them like any trace. A file already
there with as many lines or more is left alone (the run is there already); a shorter one
is replaced by the whole run, written beside it and moved into place."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from traces.home import traces_dir


class Readable(Protocol):
    """What a pull reads of the lake (a `TraceStore.over_lake`)."""

    def resolve_run(self, prefix: str) -> str: ...

    def query(
        self, statement: str, params: dict[str, Any]
    ) -> tuple[list[str], list[tuple[Any, ...]]]: ...


_LINES = "SELECT event::VARCHAR FROM events WHERE run_id = $run_id ORDER BY seq"


@dataclass
class PullReport:
    written: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)  # already in the home whole
    events: int = 0


def pull(lake: Readable, home: Path, refs: list[str]) -> PullReport:
    """Write the runs `refs` (ids or unique prefixes) name from `lake` into `home`."""
    report = PullReport()
    folder = traces_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    for run_id in [lake.resolve_run(ref) for ref in refs]:
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
    return report


def _line_count(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.endswith(b"\n"))
