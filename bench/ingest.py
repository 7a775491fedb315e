"""Ingest benchmark: the trace store against DuckDB's own NDJSON reader on the same files.

    .venv/bin/python bench/ingest.py [--events 1000000 --runs 5000] [--data bench/.data]

Generates the traces (once per size, kept under bench/.data/), then prints (a) workbench
ingest throughput, (b) DuckDB's raw `read_ndjson_objects` of the same files into a plain
table, (c) the ratio a/b, (d) peak memory of this process, (e) the time to pick up one new
200-event run in the full store. Targets: ratio >= 0.5, peak RSS < 1.5 GB, pick-up < 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from traces.events import (  # noqa: E402
    McpMessage,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    RunEnd,
    RunStart,
    ToolEnd,
    ToolStart,
    Totals,
)
from traces.recorder import Recorder  # noqa: E402
from traces.writer import MemorySink  # noqa: E402

TEMPLATE_ID = "RUNIDRUNIDRUNIDRUNIDRUNIDRUNID00"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ')} inside the project folder",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "relative path"}},
                "required": ["path"],
            },
        },
    }
    for name in ("read_file", "list_dir", "search_files")
]


def template_run(events: int) -> list[str]:
    """One realistic run of exactly `events` lines, with a placeholder run id."""
    sink = MemorySink()
    rec = Recorder(TEMPLATE_ID, [sink])
    rec.emit(RunStart, turn=None, task="Find the bug in src/", model="gpt-4o-mini", tools=TOOLS)
    messages: list[dict] = [{"role": "user", "content": "Find the bug in src/"}]
    turn = 0
    while rec.next_seq < events - 1:
        turn += 1
        rec.turn = turn
        rec.emit(ModelRequest, messages=messages[-6:], tools=TOOLS, estimated_tokens=900)
        for index in range(6):
            if rec.next_seq >= events - 1:
                break
            delta = {"content": f"looking at part {index} of the code "}
            data = {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": delta}]}
            rec.emit(ModelChunk, index=index, elapsed_ms=200.0 + index, data=data)
        call = {"id": f"call_{turn}", "type": "function", "function": {"name": "read_file"}}
        call["function"]["arguments"] = json.dumps({"path": f"src/mod{turn}.py"})
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        for cls, fields in (
            (ModelResponse, {"message": message, "usage": {"total_tokens": 950}, "chunks": 6}),
            (ToolStart, {"call_id": f"call_{turn}", "name": "read_file", "arguments_raw": "{}"}),
            (McpMessage, {"server": "fs", "direction": "send", "frame": {"id": turn}}),
            (
                ToolEnd,
                {
                    "call_id": f"call_{turn}",
                    "name": "read_file",
                    "ok": True,
                    "result": "def f():\n    return 1\n" * 4,
                    "duration_ms": 2.5,
                },
            ),
        ):
            if rec.next_seq >= events - 1:
                break
            rec.emit(cls, **fields)
        messages += [message, {"role": "tool", "tool_call_id": f"call_{turn}", "content": "..."}]
    rec.emit(RunEnd, turn=None, status="completed", totals=Totals(turns=turn))
    return [json.dumps(e.model_dump(mode="json"), separators=(",", ":")) for e in sink.events]


def generate(folder: Path, events: int, runs: int) -> None:
    marker = folder / ".complete"
    if marker.exists():
        return
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    text = "\n".join(template_run(events // runs)) + "\n"
    for _ in range(runs):
        run_id = uuid.uuid4().hex
        (folder / f"{run_id}.jsonl").write_text(text.replace(TEMPLATE_ID, run_id))
    marker.write_text("ok\n")


def peak_rss_mb() -> float:
    # ru_maxrss is KiB on Linux, bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5_000)
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / ".data")
    args = parser.parse_args()

    import duckdb  # the benchmark compares against DuckDB itself

    from traces.store import TraceStore

    folder = args.data / f"e{args.events}-r{args.runs}"
    print(f"generating {args.events:,} events over {args.runs:,} runs in {folder} …")
    generate(folder, args.events, args.runs)
    files = sorted(str(p) for p in folder.glob("*.jsonl"))
    megabytes = sum(Path(f).stat().st_size for f in files) / 1e6

    with tempfile.TemporaryDirectory(prefix="workbench-bench-") as scratch:
        raw_db = duckdb.connect(str(Path(scratch) / "raw.duckdb"))
        started, cpu = time.perf_counter(), time.process_time()
        raw_db.execute("CREATE TABLE raw AS SELECT * FROM read_ndjson_objects(?)", [files])
        raw_s, raw_cpu = time.perf_counter() - started, time.process_time() - cpu
        raw_rows = (raw_db.execute("SELECT count(*) FROM raw").fetchone() or (0,))[0]
        raw_db.close()

        store = TraceStore.open(Path(scratch) / "workbench.duckdb")
        started, cpu = time.perf_counter(), time.process_time()
        report = store.ingest([folder])
        ingest_s, ingest_cpu = time.perf_counter() - started, time.process_time() - cpu

        extra = Path(scratch) / "new"
        extra.mkdir()
        run_id = uuid.uuid4().hex
        lines = "\n".join(template_run(200)).replace(TEMPLATE_ID, run_id) + "\n"
        (extra / f"{run_id}.jsonl").write_text(lines)
        shutil.copy(extra / f"{run_id}.jsonl", folder.parent / "pickup.jsonl")
        started = time.perf_counter()
        pickup = store.ingest([folder, extra])
        pickup_s = time.perf_counter() - started
        store.close()
        (folder.parent / "pickup.jsonl").unlink()

    ingest_rate = report.new_events / ingest_s
    raw_rate = raw_rows / raw_s
    print(f"traces: {len(files):,} files, {megabytes:,.0f} MB")
    print(
        f"(a) workbench ingest:        {report.new_events:>9,} events in {ingest_s:6.2f} s "
        f"= {ingest_rate:>9,.0f} events/s ({report.new_runs:,} runs)"
    )
    print(
        f"(b) duckdb read_ndjson_objects: {raw_rows:>6,} rows   in {raw_s:6.2f} s "
        f"= {raw_rate:>9,.0f} rows/s"
    )
    print(f"(c) ratio a/b:               {ingest_rate / raw_rate:.2f}   (target >= 0.5)")
    print(
        f"    CPU seconds (load-independent): workbench {ingest_cpu:.2f}, raw {raw_cpu:.2f}, "
        f"ratio {raw_cpu / ingest_cpu:.2f}"
    )
    print(f"(d) peak RSS:                {peak_rss_mb():,.0f} MB   (target < 1500 MB)")
    print(
        f"(e) new 200-event run picked up in {pickup_s * 1000:.0f} ms "
        f"({pickup.new_events} events; target < 500 ms)"
    )
    if report.problems or pickup.problems:
        print(f"problems: {(report.problems + pickup.problems)[:3]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
