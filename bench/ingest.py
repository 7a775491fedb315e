"""Ingest benchmark: rebuilding the trace store against DuckDB's own NDJSON reader on the
same files, and picking up a new run in the full store against an empty home.

    .venv/bin/python bench/ingest.py [--events 520000 --runs 100000] [--rounds 5]

Generates the traces (once per size, kept under bench/.data/; the first time takes a
minute), reads them all once so both sides start from a warm page cache, then prints

(a) the store rebuilt from the traces (`ingest_home` of a home whose store is gone), in
    events/s, with its progress on stderr as a command shows it;
(b) DuckDB's raw `read_ndjson_objects` of the same files into a plain table;
(c) the ratio a/b, by wall clock and by CPU time (steadier on a shared machine) — target
    >= 0.5;
(d) peak memory of the rebuild — target < 1.5 GB — and of the reference: each side runs in
    a process of its own (imports done before its clock starts), so that each peak is its
    own and not the other's high-water mark;
(e) a new 200-event run seen by `workbench runs --json`, whole process, on the full home,
    next to the same command on an empty home, in interleaved rounds (a new run each
    round): medians of wall and CPU time — target < 0.3 s above the empty home;
(f) a first ingest of a home of 1,000,000 small runs (2,000,000 events; `--big-runs N`,
    0 to leave it out; generated once, a few minutes): its time and peak memory next to
    DuckDB's own reader of the same files, each in a process of its own. Ingest reads in
    batches, so its peak stays bounded whatever the number of runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
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
    """The traces, once per size and schema version: traces an older workbench wrote would
    be migrated line by line on the careful path, not measured on the bulk one."""
    from traces.versions import SCHEMA_VERSION

    marker = folder / ".complete"
    made = f"schema {SCHEMA_VERSION}\n"
    if marker.exists() and marker.read_text() == made:
        return
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    # `events` in all: the first `events % runs` runs get one event more than the rest.
    short = "\n".join(template_run(events // runs)) + "\n"
    long = "\n".join(template_run(events // runs + 1)) + "\n"
    for number in range(runs):
        run_id = uuid.uuid4().hex
        text = long if number < events % runs else short
        (folder / f"{run_id}.jsonl").write_text(text.replace(TEMPLATE_ID, run_id))
    marker.write_text(made)


def peak_rss_mb() -> float:
    # ru_maxrss is KiB on Linux, bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def measure(side: str, folder: Path, target: Path) -> None:
    """One side of (a)/(b), in this process (`--measure`): prints its figures as JSON."""
    import duckdb  # the reference is DuckDB itself

    if side == "raw":
        files = sorted(str(p) for p in folder.glob("*.jsonl"))
        raw_db = duckdb.connect(str(target))
        started, cpu = time.perf_counter(), time.process_time()
        raw_db.execute("CREATE TABLE raw AS SELECT * FROM read_ndjson_objects(?)", [files])
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        count = (raw_db.execute("SELECT count(*) FROM raw").fetchone() or (0,))[0]
        raw_db.close()
        figures = {"count": count, "runs": len(files), "problems": []}
    else:
        import traces.store.ingest  # noqa: F401  loaded before the clock, like duckdb above
        from traces.store import TraceStore
        from workbench.cli.progress import StderrProgress

        progress = StderrProgress()
        started, cpu = time.perf_counter(), time.process_time()
        with TraceStore.for_home(target) as store:
            report = store.ingest_home(target, progress)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        progress.close()
        figures = {"count": report.new_events, "runs": report.new_runs}
        figures["problems"] = report.problems[:3]
    print(json.dumps(figures | {"seconds": seconds, "cpu": cpu, "peak_mb": peak_rss_mb()}))


def measured(side: str, folder: Path, target: Path) -> dict:
    """`measure` in a process of its own."""
    argv = [sys.executable, __file__, "--measure", side, str(folder), str(target)]
    done = subprocess.run(argv, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def whole_process(
    argv: list[str], home: Path, allowed: tuple[int, ...] = (0,)
) -> tuple[float, float]:
    """Wall and CPU seconds (all threads) of one `workbench` command, which must exit with
    one of `allowed` (a diff of runs that differ exits 1)."""
    env = dict(os.environ, WORKBENCH_HOME=str(home))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules load from bytecode
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in allowed:
        error = process.stderr.read().decode() if process.stderr else ""
        raise SystemExit(f"{' '.join(argv)} failed: {error}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=520_000)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5, help="pick-up rounds (default 5)")
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / ".data")
    parser.add_argument("--big-runs", type=int, default=1_000_000, help="runs of (f), 0 to skip it")
    parser.add_argument("--big-rounds", type=int, default=1, help="(f) rounds, best counts")
    parser.add_argument("--measure", nargs=3, help=argparse.SUPPRESS)  # one side, see measure
    args = parser.parse_args()
    if args.measure:
        side, folder_arg, target = args.measure
        measure(side, Path(folder_arg), Path(target))
        return 0

    from traces.store import TraceStore

    workbench = str(Path(sys.executable).parent / "workbench")
    folder = args.data / f"e{args.events}-r{args.runs}"
    print(f"generating {args.events:,} events over {args.runs:,} runs in {folder} …")
    generate(folder, args.events, args.runs)
    picked = folder / "pickup"  # new runs of (e), inside the home's traces: removed after
    shutil.rmtree(picked, ignore_errors=True)
    files = sorted(folder.glob("*.jsonl"))
    megabytes = sum(len(f.read_bytes()) for f in files) / 1e6  # warms the cache

    with tempfile.TemporaryDirectory(prefix="workbench-bench-") as scratch:
        raw = measured("raw", folder, Path(scratch) / "raw.duckdb")
        home = Path(scratch) / "home"
        home.mkdir()
        (home / "traces").symlink_to(folder.resolve(), target_is_directory=True)
        rebuild = measured("rebuild", folder, home)

        empty = Path(scratch) / "empty"
        (empty / "traces").mkdir(parents=True)
        command = [workbench, "runs", "--json"]
        whole_process(command, empty)  # warm-up: the empty home's store, the imports
        pickup: list[tuple[float, float]] = []
        reference: list[tuple[float, float]] = []
        try:
            picked.mkdir()
            for _ in range(args.rounds):
                run_id = uuid.uuid4().hex
                lines = "\n".join(template_run(200)).replace(TEMPLATE_ID, run_id) + "\n"
                (picked / f"{run_id}.jsonl").write_text(lines)
                pickup.append(whole_process(command, home))
                reference.append(whole_process(command, empty))
            with TraceStore.for_home(home) as store:
                picked_up = store.count_runs() - rebuild["runs"]
        finally:
            shutil.rmtree(picked, ignore_errors=True)

    ingest_rate = rebuild["count"] / rebuild["seconds"]
    raw_rate = raw["count"] / raw["seconds"]
    print(f"traces: {len(files):,} files, {megabytes:,.0f} MB")
    print(
        f"(a) store rebuilt from them: {rebuild['count']:>9,} events in "
        f"{rebuild['seconds']:6.2f} s = {ingest_rate:>9,.0f} events/s ({rebuild['runs']:,} runs)"
    )
    print(
        f"(b) duckdb read_ndjson_objects: {raw['count']:>6,} rows   in {raw['seconds']:6.2f} s "
        f"= {raw_rate:>9,.0f} rows/s"
    )
    print(
        f"(c) ratio a/b: {ingest_rate / raw_rate:.2f} by wall clock, "
        f"{raw['cpu'] / rebuild['cpu']:.2f} by CPU time (workbench {rebuild['cpu']:.1f} s, "
        f"raw {raw['cpu']:.1f} s)   (target >= 0.5)"
    )
    print(
        f"(d) peak RSS of the rebuild: {rebuild['peak_mb']:,.0f} MB   (target < 1500 MB); "
        f"of the reference: {raw['peak_mb']:,.0f} MB"
    )
    wall, cpu_s = (statistics.median(m) for m in zip(*pickup, strict=True))
    empty_wall, empty_cpu = (statistics.median(m) for m in zip(*reference, strict=True))
    print(
        f"(e) a new 200-event run seen by `runs --json` in the {rebuild['count']:,}-event "
        f"store ({picked_up} of {args.rounds} picked up), median of {args.rounds}:\n"
        f"    {wall:.3f} s wall, {cpu_s:.3f} s CPU; empty home {empty_wall:.3f} s wall, "
        f"{empty_cpu:.3f} s CPU: {wall - empty_wall:+.3f} s wall, {cpu_s - empty_cpu:+.3f} s CPU "
        f"above it   (target < 0.3 s above)"
    )
    if rebuild["problems"]:
        print(f"problems: {rebuild['problems']}")
    if args.big_runs:
        big_store(args.data, args.big_runs, args.big_rounds)
    return 0


def big_store(data: Path, runs: int, rounds: int = 1) -> None:
    """(f): the first ingest of a home of `runs` two-event runs against DuckDB's reader."""
    folder = data / f"e{2 * runs}-r{runs}"
    print(f"generating {2 * runs:,} events over {runs:,} runs in {folder} …")
    generate(folder, 2 * runs, runs)
    for path in folder.glob("*.jsonl"):  # warms the cache, as for (a) and (b)
        path.read_bytes()
    raws: list[dict] = []
    ingests: list[dict] = []
    for _ in range(rounds):  # interleaved, so the machine's drift hits both alike
        with tempfile.TemporaryDirectory(prefix="workbench-bench-") as scratch:
            home = Path(scratch) / "home"
            home.mkdir()
            (home / "traces").symlink_to(folder.resolve(), target_is_directory=True)
            # DuckDB's reader itself may run out of memory on so many files.
            with contextlib.suppress(subprocess.CalledProcessError):
                raws.append(measured("raw", folder, Path(scratch) / "raw.duckdb"))
            ingests.append(measured("rebuild", folder, home))
    ingest = min(ingests, key=lambda figures: figures["seconds"])
    print(
        f"(f) first ingest of {ingest['runs']:,} runs ({ingest['count']:,} events), best of "
        f"{rounds}: {ingest['seconds']:.1f} s ({min(i['cpu'] for i in ingests):.1f} s CPU), "
        f"peak RSS {ingest['peak_mb']:,.0f} MB   (target < 2000 MB)"
    )
    if not raws:
        print("    duckdb read_ndjson_objects of the same files failed (see above)")
    else:
        raw = min(raws, key=lambda figures: figures["seconds"])
        raw_cpu = min(r["cpu"] for r in raws)
        print(
            f"    duckdb read_ndjson_objects of the same files: {raw['seconds']:.1f} s "
            f"({raw_cpu:.1f} s CPU), peak RSS {raw['peak_mb']:,.0f} MB; ratio "
            f"{raw['seconds'] / ingest['seconds']:.2f} by wall clock, "
            f"{raw_cpu / min(i['cpu'] for i in ingests):.2f} by CPU time   (target >= 0.9)"
        )
    if ingest["problems"]:
        print(f"problems: {ingest['problems']}")


if __name__ == "__main__":
    raise SystemExit(main())
