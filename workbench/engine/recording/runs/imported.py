"""Runs made elsewhere, written as trace files: OpenTelemetry traces and coding-agent session
files become runs the same way. A run is written once, as `<home>/traces/<run id>.jsonl`
with the home's redaction; importing it again writes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from traces.events import Event, RunEnd
from traces.home import open_run_trace, traces_dir


@dataclass
class ImportedRun:
    run_id: str
    status: str
    turns: int
    path: Path
    written: bool  # False: this run was imported before
    # What of an OpenTelemetry source the run left out (0 for other sources).
    spans: int = 0  # the trace's spans
    unused_spans: int = 0  # of them, those not turned into any event of the run
    logs: int = 0  # the trace's log records
    unused_logs: int = 0

    def summary(self) -> str:
        """What of the source the run left out, for the line that reports it."""
        parts = []
        if self.unused_spans:
            parts.append(f"{self.unused_spans} of {self.spans} span(s) not turned into events")
        if self.unused_logs:
            parts.append(f"{self.unused_logs} of {self.logs} log record(s) unused")
        return "; ".join(parts)


def write_imported(home: Path, events: Sequence[Event]) -> ImportedRun:
    """Write one run's events (run_start first) under `home`, unless a trace of that run is
    there already. Raises RedactionConfigError for a configured pattern that does not
    compile."""
    run_id = events[0].run_id
    path = traces_dir(home) / f"{run_id}.jsonl"
    end = events[-1]
    status = end.status if isinstance(end, RunEnd) else "incomplete"
    turns = len({e.turn for e in events if e.turn is not None})
    if path.exists():
        return ImportedRun(run_id, status, turns, path, written=False)
    writer = open_run_trace(home, run_id)
    try:
        for event in events:
            writer.write(event)
    finally:
        writer.close()
    return ImportedRun(run_id, status, turns, path, written=True)
