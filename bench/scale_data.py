"""The traces of `bench/scale.py`: a home of many small runs and one long run, written
straight as JSONL text (a template per shape, its run id, times, task and status
substituted), by several processes at once.

    home = build_traces(cache / "scale-r1000000", runs=1_000_000, events_per_run=10,
                        long_events=200_000)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.ingest import TEMPLATE_ID, template_run  # noqa: E402
from traces.versions import SCHEMA_VERSION  # noqa: E402

# Every run starts a second after the one before, from here; the long run is the newest.
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
# A word in the task of one run in SEARCH_EVERY, for `search WORD` (found, not everywhere).
SEARCH_WORD = "zanzibar"
SEARCH_EVERY = 1000
# One run in this many ends in error, so the status filter has work to do.
ERROR_EVERY = 6
_TS = re.compile(r'"ts":"[^"]+"')
_TASK = '"task":"Find the bug in src/"'


def _template(events: int, start: datetime | None = None) -> str:
    """A run of `events` lines with placeholders for what differs between runs; events are
    a millisecond apart, from the run's start second (`@TS@`) or from `start`."""
    lines = template_run(events)
    out = []
    for number, line in enumerate(lines):
        if start is None:
            when = f"@TS@.{number % 1000:03d}000Z"
        else:
            when = (start + timedelta(milliseconds=number)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        line = _TS.sub(f'"ts":"{when}"', line, count=1)
        out.append(line.replace(_TASK, '"task":"@TASK@"'))
    return "\n".join(out) + "\n"


def _fill(template: str, run_id: str, index: int) -> str:
    when = (EPOCH + timedelta(seconds=index)).strftime("%Y-%m-%dT%H:%M:%S")
    task = f"task {index}: find the bug in module {index % 97}"
    if index % SEARCH_EVERY == 0:
        task += f" near {SEARCH_WORD}"
    text = template.replace(TEMPLATE_ID, run_id).replace("@TS@", when).replace("@TASK@", task)
    if index % ERROR_EVERY == ERROR_EVERY - 1:
        text = text.replace('"status":"completed"', '"status":"error"')
    return text


def _write_share(folder: str, template: str, start: int, stop: int, seed: int) -> int:
    rng = uuid.UUID(int=seed).int
    written = 0
    for index in range(start, stop):
        # Ids derived from the index: the same home each time it is built.
        run_id = uuid.UUID(int=(rng + index * 0x9E3779B97F4A7C15) % (1 << 128)).hex
        fd = os.open(f"{folder}/{run_id}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, _fill(template, run_id, index).encode())
        finally:
            os.close(fd)
        written += 1
    return written


def _write_long(folder: str, events: int, index: int) -> str:
    run_id = "1" * 32  # easy to name on a command line
    template = _template(events, EPOCH + timedelta(seconds=index))
    Path(folder, f"{run_id}.jsonl").write_text(_fill(template, run_id, index))
    return run_id


def _written_version(folder: Path) -> object:
    """The schema version the traces were written in (an older workbench's would be migrated
    line by line on the careful path, not measured on the bulk one)."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.endswith(".jsonl"):
                with open(entry.path, "rb") as handle:
                    return json.loads(handle.readline()).get("schema_version")
    return None


def build_traces(
    home: Path, runs: int, events_per_run: int, long_events: int, workers: int = 2
) -> dict[str, object]:
    """Write the traces of the home once (`<home>/.traces-complete` says they are whole);
    returns what was written: the long run's id, the counts, the seconds it took."""
    marker = home / ".traces-complete"
    folder = home / "traces"
    if marker.exists() and _written_version(folder) == SCHEMA_VERSION:
        return dict(json.loads(marker.read_text()))
    shutil.rmtree(home, ignore_errors=True)
    folder.mkdir(parents=True)
    started = time.perf_counter()
    template = _template(events_per_run)
    shares = [(runs * k // workers, runs * (k + 1) // workers) for k in range(workers)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        long = pool.submit(_write_long, str(folder), long_events, runs) if long_events else None
        done = [pool.submit(_write_share, str(folder), template, a, b, 23) for a, b in shares]
        written = sum(future.result() for future in done)
        long_id = long.result() if long is not None else None
    figures: dict[str, object] = {
        "runs": written,
        "events": written * events_per_run + long_events,
        "long_run": long_id,
        "long_events": long_events,
        "seconds": round(time.perf_counter() - started, 1),
    }
    marker.write_text(json.dumps(figures) + "\n")
    return figures
