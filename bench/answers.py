"""Answers benchmark (issue 38): `workbench compare` over N runs of one task, beside
`workbench sql` reading those runs' events, each a whole process on the same home.

    .venv/bin/python bench/answers.py [--runs 1000] [--rounds 5]

Generates the runs once per size under a temporary home (the 21 runs of
tests/support/failing_runs.py's KNOWN_GROUP, repeated: a passing path, seven ways of
leaving it), ingests them, then times in interleaved rounds

(a) `workbench compare --task RUN --json` (every run of the task);
(b) `workbench sql --json "SELECT event FROM events WHERE run_id IN (the task's runs)"`;
(c) the ratio a/b of the medians, by wall clock and by CPU time — target <= 3;
(d) each side's peak memory (RSS of its own process): compare holds a window of the
    runs' step keys, never their events, so its peak stays near a command's start-up.

Each figure is a function: `compare_figures` here, `failures_figure` in
bench/answers_failures.py (`workbench failures` over bench/scale.py's home beside a plain
`group by status`; `--failures-runs 0` skips it).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.failing_runs import KNOWN_GROUP, runs_of_one_task  # noqa: E402

WORKBENCH = [sys.executable, "-c", "import sys; from workbench.cli import main; sys.exit(main())"]
TARGET_RATIO = 3.0


@dataclass(frozen=True)
class Timed:
    wall_s: float
    cpu_s: float
    peak_mb: float


def timed(argv: list[str]) -> Timed:
    """One whole `workbench` process: wall and CPU time, and its peak RSS (as its only
    child of a wrapper, so the peak is its own)."""
    wrapper = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
        "wall = time.perf_counter() - t; u = resource.getrusage(resource.RUSAGE_CHILDREN); "
        "print(wall, u.ru_utime + u.ru_stime, u.ru_maxrss); sys.exit(done.returncode)"
    )
    done = subprocess.run(
        [sys.executable, "-c", wrapper, *argv], capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv[3:])} failed: {done.stderr.strip()}")
    wall, cpu, peak_kb = done.stdout.split()
    return Timed(float(wall), float(cpu), int(peak_kb) / 1024)


def make_home(home: Path, runs: int) -> str:
    """`runs` runs (about) of one task in `home`, ingested; a run id of the task."""
    per_round = sum(n for _, n, _ in KNOWN_GROUP)
    rounds = max(1, round(runs / per_round))
    scripts = [(name, n * rounds, script) for name, n, script in KNOWN_GROUP]
    (home / "traces").mkdir(parents=True)
    runs_of_one_task(home / "traces", scripts)
    subprocess.run([*WORKBENCH, "--home", str(home), "runs"], check=True, capture_output=True)
    return "pass-0"


def compare_figures(runs: int = 1000, rounds: int = 5) -> list[str]:
    """The compare figure's lines: N runs of one task compared, beside `sql` reading them."""
    with tempfile.TemporaryDirectory(prefix="bench-answers-") as scratch:
        home = Path(scratch) / "home"
        run = make_home(home, runs)
        base = [*WORKBENCH, "--home", str(home)]
        listed = subprocess.run(
            [*base, "sql", "--json", f"SELECT count(*) AS n FROM runs WHERE {_TASK.format(run)}"],
            capture_output=True,
            text=True,
            check=True,
        )
        count = json.loads(listed.stdout)[0]["n"]
        compare = [*base, "compare", "--task", run, "--json"]
        read = [*base, "sql", "--json", f"SELECT event FROM events WHERE {_TASK.format(run)}"]
        compared: list[Timed] = []
        reads: list[Timed] = []
        for _ in range(rounds):  # interleaved, so a change in the machine's load hits both
            compared.append(timed(compare))
            reads.append(timed(read))
    wall = statistics.median(t.wall_s for t in compared) / statistics.median(
        t.wall_s for t in reads
    )
    cpu = statistics.median(t.cpu_s for t in compared) / statistics.median(t.cpu_s for t in reads)
    verdict = "ok" if min(wall, cpu) <= TARGET_RATIO else "OVER TARGET"
    return [
        f"compare: {count:,} runs of one task, median of {rounds} rounds, whole processes",
        f"  (a) workbench compare --task   {_line(compared)}",
        f"  (b) workbench sql (its events) {_line(reads)}",
        f"  (c) a/b  wall {wall:.2f}x  cpu {cpu:.2f}x  (target <= {TARGET_RATIO:.0f}x: {verdict})",
        f"  (d) peak memory  compare {max(t.peak_mb for t in compared):.0f} MB, "
        f"sql {max(t.peak_mb for t in reads):.0f} MB",
    ]


# The runs sharing the task fingerprint of run {0}.
_TASK = (
    "run_id IN (SELECT run_id FROM runs WHERE task_fingerprint = "
    "(SELECT task_fingerprint FROM runs WHERE run_id = '{0}'))"
)


def _line(times: list[Timed]) -> str:
    wall = statistics.median(t.wall_s for t in times)
    cpu = statistics.median(t.cpu_s for t in times)
    return f"wall {wall:6.3f} s  cpu {cpu:6.3f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--failures-runs",
        type=int,
        default=1_000_000,
        help="the size of bench/scale.py's home `workbench failures` is timed on (0 skips it)",
    )
    parser.add_argument("--cache", type=Path, help="default $WORKBENCH_BENCH_CACHE, bench/.cache")
    args = parser.parse_args()
    started = time.perf_counter()
    print("\n".join(compare_figures(args.runs, args.rounds)))
    if args.failures_runs:
        from bench.answers_failures import failures_figure, scale_home

        failures_figure(scale_home(args.failures_runs, args.cache), 3)
    print(
        f"({time.perf_counter() - started:.0f} s in all; peak of this process "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)"
    )


if __name__ == "__main__":
    main()
