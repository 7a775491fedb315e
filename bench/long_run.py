"""Long-run benchmark: the chain comparison and the exports of one long run beside the
floor, `workbench sql` reading every event of that run from the store, all measured in
this run on one home (issue 41, item 2).

    .venv/bin/python bench/long_run.py [--long 200000] [--rounds 3] [--cache bench/.cache]

The home (`bench.scale_data`: the long run of `--long` events and 20 runs of 10) is built
once and kept in the cache folder (`$WORKBENCH_BENCH_CACHE`, else bench/.cache). Each
figure is a whole `workbench` process, the median of `--rounds` after one warm-up, wall
and CPU; the ratios to the floor are printed beside their targets:

    diff LONG SMALL                  <= 3x the floor
    export LONG --format json        <= 6x
    export LONG --format md          <= 4x
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.ingest import whole_process  # noqa: E402
from bench.scale import WORKBENCH, cache_dir, load, output, timed  # noqa: E402
from bench.scale_data import build_traces  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--long", type=int, default=200_000, help="events of the long run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cache", type=Path, help="default $WORKBENCH_BENCH_CACHE, bench/.cache")
    args = parser.parse_args()

    home = cache_dir(args.cache) / f"long-l{args.long}"
    written = build_traces(home, runs=20, events_per_run=10, long_events=args.long)
    long_run = str(written["long_run"])
    whole_process([WORKBENCH, "ingest", str(home / "traces")], home)
    listed = json.loads(output([WORKBENCH, "runs", "--json", "--limit", "2"], home))
    small = next(row["run_id"] for row in listed if row["run_id"] != long_run)
    print(f"home {home}: a run of {args.long:,} events and {written['runs']} of 10 ({load()})")

    floor_sql = f"SELECT event FROM events WHERE run_id = '{long_run}'"
    commands = {
        "floor: sql reading every event": ([WORKBENCH, "sql", floor_sql], None),
        "diff LONG SMALL": ([WORKBENCH, "diff", long_run, small], 3.0),
        "export LONG --format json": ([WORKBENCH, "export", long_run, "--format", "json"], 6.0),
        "export LONG --format md": ([WORKBENCH, "export", long_run, "--format", "md"], 4.0),
    }
    figures: dict[str, tuple[float, float]] = {}
    started = load()
    for label, (argv, _) in commands.items():
        figures[label] = timed(argv, home, args.rounds, allowed=(0, 1))
    floor_wall, floor_cpu = next(iter(figures.values()))
    width = max(len(label) for label in commands)
    print(f"\n{'figure':<{width}}  {'wall':>8}  {'CPU':>8}  {'× floor (wall, CPU)':<22}  target")
    for label, (_, target) in commands.items():
        wall, cpu = figures[label]
        ratio = f"{wall / floor_wall:.1f}×, {cpu / floor_cpu:.1f}×" if target else ""
        aim = f"<= {target:g}×" if target else ""
        print(f"{label:<{width}}  {wall:>7.2f}s  {cpu:>7.2f}s  {ratio:<22}  {aim}")
    print(f"\n(median of {args.rounds}; {started} .. {load()})")
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"({time.perf_counter() - started:.0f} s)")
    raise SystemExit(code)
