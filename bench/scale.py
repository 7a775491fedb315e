"""Scale benchmark: a home of 1,000,000 runs (10,000,000 events) and one 200,000-event run,
built once and cached, and every figure of the scale targets next to its reference.

    .venv/bin/python bench/scale.py [--runs 1000000 --events-per-run 10 --long 200000]
                                    [--cache bench/.cache] [--rounds 3] [--no-tui]

The cache folder is `$WORKBENCH_BENCH_CACHE`, else bench/.cache (gitignored). Building it
writes the traces (`bench.scale_data`, in parallel processes), then measures the first
ingest of the whole home against DuckDB's own `read_ndjson_objects` of the same files, each
in a process of its own after one read of every file (`bench/ingest.py --measure`); both
figures are kept with the home and printed with the load they were taken under. Every
other figure is measured in this run, on the cached home:

- `runs` (first page, and filtered), `show RUN` of a small run, `show` of the long run,
  `search WORD`, a dry-run fork of the long run's last turn and a diff of its tool schemas
  (no target for these two; they read the store, not the run): whole processes, median of
  `--rounds`, with the load average beside;
- `replay` and `bundle` of the long run, and `replay` of that bundle: the peak RSS of
  each, whole processes (the generated long run's replay stops at its run_start, whose
  recorded tool sources differ: what it weighs is checking and streaming the trace, and for
  the bundle unpacking it first); `serve-model --replay` of it, asked
  its last recorded request and one it never recorded (a 409, which reads every recorded
  request again), its peak RSS when stopped;
- `sql`: counts that must equal what was written, exactly;
- storage: bytes per event of the store and of the traces, and a 200-turn run against a
  100-turn one of the real agent loop (each request resends the history), store and trace;
- the TUI (`bench/tui.py --home`): every screen on this home, and the memory of walking
  all of the long run's events in the replay stepper.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.ingest import measured, whole_process  # noqa: E402
from bench.scale_data import SEARCH_EVERY, SEARCH_WORD, build_traces  # noqa: E402

WORKBENCH = str(Path(sys.executable).parent / "workbench")


def cache_dir(given: Path | None) -> Path:
    if given is not None:
        return given
    env = os.environ.get("WORKBENCH_BENCH_CACHE")
    return Path(env) if env else ROOT / "bench" / ".cache"


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def _kept(path: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(path.read_text().splitlines()[-1]))
    except (OSError, ValueError, IndexError):
        return None


def first_ingest(home: Path, reference: bool) -> dict[str, dict[str, Any] | None]:
    """The first ingest of the home and DuckDB's reader of the same files, each measured
    once and kept in the home (ingest.json, raw.json); the reader is left out, for now,
    when not `reference`."""
    ingest, raw = _kept(home / "ingest.json"), _kept(home / "raw.json")
    if ingest is None or not (home / "workbench.duckdb").is_file():
        for name in ("workbench.duckdb", "workbench.duckdb.wal"):
            (home / name).unlink(missing_ok=True)
        print("reading every trace once (both sides start from a warm page cache) …")
        for path in (home / "traces").iterdir():
            path.read_bytes()
        before = load()
        print("first ingest of the home (progress below) …", flush=True)
        ingest = measured("rebuild", home / "traces", home) | {"load": before}
        (home / "ingest.json").write_text(json.dumps(ingest) + "\n")
    if raw is None and reference:
        print("DuckDB's read_ndjson_objects of the same files …", flush=True)
        with tempfile.TemporaryDirectory(prefix="workbench-scale-") as scratch:
            before = load()
            try:
                raw = measured("raw", home / "traces", Path(scratch) / "raw.duckdb")
            except subprocess.CalledProcessError:
                raw = {"failed": True}
            raw["load"] = before
        (home / "raw.json").write_text(json.dumps(raw) + "\n")
    return {"ingest": ingest, "raw": raw}


def timed(
    argv: list[str], home: Path, rounds: int, allowed: tuple[int, ...] = (0,)
) -> tuple[float, float]:
    """Median wall and CPU seconds of a whole `workbench` process, after one warm-up."""
    whole_process(argv, home, allowed)
    measured = [whole_process(argv, home, allowed) for _ in range(rounds)]
    return statistics.median(m[0] for m in measured), statistics.median(m[1] for m in measured)


def peak_of(argv: list[str], home: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB and exit code of one `workbench` command (which may
    exit non-zero: a replay that diverges)."""
    env = dict(os.environ, WORKBENCH_HOME=str(home))
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - started, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def served_peak(run: str, home: Path) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MB and the answers' statuses of `serve-model --replay RUN`
    from its start to its stop, asked the run's last recorded request, then one it never
    recorded."""
    import signal
    import urllib.error
    import urllib.request

    last: dict[str, Any] = {}
    with (home / "traces" / f"{run}.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if '"model_request"' in line:
                event = json.loads(line)
                if event.get("type") == "model_request":
                    last = event
    asked = {"model": "m", "messages": last["messages"], "tools": last["tools"]}
    never = asked | {"messages": [{"role": "user", "content": "never recorded"}]}
    env = dict(os.environ, WORKBENCH_HOME=str(home))
    started = time.perf_counter()
    argv = [WORKBENCH, "serve-model", "--replay", run, "--port", "0"]
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    base_url = process.stdout.readline().decode().split()[1]  # "serving URL (...)"
    statuses = []
    for body in (asked | last["params"], never):
        sent = urllib.request.Request(
            f"{base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(sent, timeout=3600) as answer:
                statuses.append(str(answer.status))
        except urllib.error.HTTPError as refused:
            statuses.append(str(refused.code))
    process.send_signal(signal.SIGINT)
    _, _, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - started, usage.ru_maxrss / 1024, " then ".join(statuses)


def output(argv: list[str], home: Path) -> str:
    env = dict(os.environ, WORKBENCH_HOME=str(home))
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def history_runs(scratch: Path) -> dict[str, float]:
    """Bytes of a 200-turn run of the real agent loop against a 100-turn one: trace file and
    store, and bytes per event of each."""
    from tests.support.big_traces import long_agent_run
    from traces.store import TraceStore

    sizes: dict[str, float] = {}
    for turns in (100, 200):
        home = scratch / f"turns-{turns}"
        (home / "traces").mkdir(parents=True)
        empty = home / "empty.duckdb"
        TraceStore.open(empty).close()
        path = long_agent_run(home / "traces", f"run{turns}", turns=turns, words_per_turn=120)
        with TraceStore.for_home(home) as store:
            store.ingest_home(home)
            events = store.count_events(f"run{turns}")
            store.query("CHECKPOINT")
        stored = (home / "workbench.duckdb").stat().st_size - empty.stat().st_size
        sizes[f"trace{turns}"] = path.stat().st_size
        sizes[f"store{turns}"] = stored
        sizes[f"events{turns}"] = events
    return sizes


def tui_figures(home: Path, long_run: str) -> list[str]:
    argv = [sys.executable, str(ROOT / "bench" / "tui.py"), "--home", str(home), "--big", long_run]
    done = subprocess.run(argv, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode not in (0, 1):
        lines.append(f"bench/tui.py failed: {done.stderr.strip().splitlines()[-1:]}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--events-per-run", type=int, default=10)
    parser.add_argument("--long", type=int, default=200_000, help="events of the long run")
    parser.add_argument("--cache", type=Path, help="default $WORKBENCH_BENCH_CACHE, bench/.cache")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-tui", action="store_true", help="leave out bench/tui.py")
    parser.add_argument(
        "--no-reference",
        action="store_true",
        help="do not measure DuckDB's reader of the home now (when not measured before)",
    )
    args = parser.parse_args()

    home = cache_dir(args.cache) / f"scale-r{args.runs}-e{args.events_per_run}"
    if args.long != 200_000:
        home = home.with_name(f"{home.name}-l{args.long}")
    print(f"home {home}")
    written = build_traces(home, args.runs, args.events_per_run, args.long)
    print(
        f"traces: {written['runs']:,} runs + 1 of {args.long:,} events (written in "
        f"{written['seconds']} s)"
    )
    ingest = first_ingest(home, reference=not args.no_reference)
    long_run = str(written["long_run"])
    events = int(written["events"])  # type: ignore[call-overload]
    runs = int(written["runs"]) + 1  # type: ignore[call-overload]

    rows: list[tuple[str, str, str]] = []
    done, raw = ingest["ingest"] or {}, ingest["raw"]
    if raw is None:
        reference, ratio = "not measured yet", "run without --no-reference"
    elif raw.get("failed"):
        reference, ratio = "failed", ""
    else:
        reference = f"{raw['seconds']:.0f} s ({raw.get('load', '')}), peak {raw['peak_mb']:,.0f} MB"
        ratio = f"ratio {raw['seconds'] / done['seconds']:.2f} by wall clock"
        ratio += f", {raw['cpu'] / done['cpu']:.2f} by CPU"
    rows.append(
        (
            f"first ingest of {done['runs']:,} runs ({done['count']:,} events)",
            f"{done['seconds']:.0f} s, {done['cpu']:.0f} s CPU ({done.get('load', '')}); "
            f"DuckDB's read_ndjson_objects {reference}: {ratio}",
            ">= 0.5×",
        )
    )
    rows.append(("peak RSS of that first ingest", f"{done['peak_mb']:,.0f} MB", "< 2,000 MB"))

    quiet = load()
    figures = {
        "runs first page": [WORKBENCH, "runs"],
        "runs --failed": [WORKBENCH, "runs", "--failed"],
        "runs --text": [WORKBENCH, "runs", "--text", "module 42"],
        "show RUN (10 events)": None,
        f"show RUN ({args.long:,} events)": [WORKBENCH, "show", long_run],
        f"search {SEARCH_WORD}": [WORKBENCH, "search", SEARCH_WORD, "--limit", "20"],
    }
    small = output([WORKBENCH, "runs", "--json", "--limit", "2"], home)
    small_id = next(r["run_id"] for r in json.loads(small) if r["run_id"] != long_run)
    figures["show RUN (10 events)"] = [WORKBENCH, "show", small_id]
    targets = {"show": "< 0.5 s", "runs": "< 0.5 s", "search": "< 2 s"}
    for label, argv in figures.items():
        assert argv is not None
        wall, cpu = timed(argv, home, args.rounds)
        target = targets[label.split()[0]]
        if label.startswith(f"show RUN ({args.long:,}"):
            target = "< 1 s"
        rows.append((f"`{label}`, whole process", f"{wall:.3f} s wall, {cpu:.3f} s CPU", target))
    # What a fork and a tool-schema diff read of the long run: its last turn, its run_start.
    turns_sql = f"SELECT max(turn) AS n FROM events WHERE run_id = '{long_run}'"
    last = output([WORKBENCH, "sql", "--json", turns_sql], home)
    last_turn = str(json.loads(last)[0]["n"])
    reads = {
        f"fork RUN ({args.long:,} events) --turn {last_turn} --dry-run": [
            WORKBENCH, "fork", long_run, "--turn", last_turn, "--dry-run",
        ],
        f"diff RUN ({args.long:,} events) RUN --tools": [
            WORKBENCH, "diff", long_run, small_id, "--tools",
        ],
    }  # fmt: skip
    for label, argv in reads.items():
        wall, cpu = timed(argv, home, args.rounds)
        rows.append((f"`{label}`, whole process", f"{wall:.3f} s wall, {cpu:.3f} s CPU", ""))
    with tempfile.TemporaryDirectory(prefix="workbench-scale-") as scratch:
        bundled = str(Path(scratch) / "long.wbundle")
        held = {
            f"replay RUN ({args.long:,} events)": ([WORKBENCH, "replay", long_run], "< 300 MB"),
            f"bundle RUN ({args.long:,} events)": (
                [WORKBENCH, "bundle", long_run, "-o", bundled],
                "< 300 MB",
            ),
            # The bundle just written, opened as a recipient opens it: unpacked and checked
            # into a throwaway home, then replayed from there.
            f"replay FILE.wbundle ({args.long:,} events)": (
                [WORKBENCH, "replay", bundled],
                "< 300 MB",
            ),
        }
        for label, (argv, target) in held.items():
            wall, peak, code = peak_of(argv, home)
            rows.append(
                (f"`{label}`, peak RSS", f"{peak:,.0f} MB ({wall:.1f} s, exit {code})", target)
            )
    wall, peak, answers = served_peak(long_run, home)
    rows.append(
        (
            f"`serve-model --replay RUN` ({args.long:,} events), peak RSS",
            f"{peak:,.0f} MB ({wall:.1f} s, answered {answers})",
            "< 300 MB",
        )
    )
    rows.append(("  (load while timing the commands)", f"{quiet} .. {load()}", ""))
    baseline = timed([sys.executable, "-c", "pass"], home, args.rounds)
    rows.append(
        ("  `python -c pass` beside them", f"{baseline[0]:.3f} s wall, {baseline[1]:.3f} s CPU", "")
    )

    counted = output(
        [
            WORKBENCH,
            "sql",
            "--json",
            "SELECT (SELECT count(*) FROM events) AS events, "
            "(SELECT count(*) FROM runs) AS runs, "
            f"(SELECT count(*) FROM runs WHERE task LIKE '%{SEARCH_WORD}%') AS found",
        ],
        home,
    )
    got = json.loads(counted)[0]
    found = args.runs // SEARCH_EVERY + (1 if args.runs % SEARCH_EVERY else 0)
    found += 1 if args.runs % SEARCH_EVERY == 0 else 0  # the long run's index is `runs`
    exact = got["events"] == events and got["runs"] == runs and got["found"] == found
    rows.append(
        (
            "`sql` counts: events, runs, runs with the word",
            f"{got['events']:,}, {got['runs']:,}, {got['found']:,} "
            f"({'exact' if exact else f'expected {events:,}, {runs:,}, {found:,}'})",
            "exact",
        )
    )

    store_bytes = (home / "workbench.duckdb").stat().st_size
    trace_bytes = sum(p.stat().st_size for p in (home / "traces").iterdir())
    rows.append(
        (
            "bytes per event: store, traces",
            f"{store_bytes / events:,.0f} B, {trace_bytes / events:,.0f} B "
            f"({store_bytes / 1e9:.2f} GB, {trace_bytes / 1e9:.2f} GB)",
            "published",
        )
    )
    with tempfile.TemporaryDirectory(prefix="workbench-scale-") as scratch:
        sizes = history_runs(Path(scratch))
    rows.append(
        (
            "bytes of a 200-turn run vs a 100-turn run",
            f"store {sizes['store200'] / sizes['store100']:.2f}× "
            f"({sizes['store100'] / sizes['events100']:,.0f} → "
            f"{sizes['store200'] / sizes['events200']:,.0f} B/event); "
            f"trace {sizes['trace200'] / sizes['trace100']:.2f}× "
            f"({sizes['trace100'] / sizes['events100']:,.0f} → "
            f"{sizes['trace200'] / sizes['events200']:,.0f} B/event)",
            "store <= 2.4×",
        )
    )

    width = max(len(row[0]) for row in rows)
    print(f"\n{'figure':<{width}}  {'measured':<60}  target")
    for label, value, target in rows:
        print(f"{label:<{width}}  {value:<60}  {target}")
    if not args.no_tui:
        print(f"\nbench/tui.py --home {home} --big {long_run} ({load()}):")
        for line in tui_figures(home, long_run):
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"\n({time.perf_counter() - started:.0f} s, {load()})")
    raise SystemExit(code)
