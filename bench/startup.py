"""Start-up time of the common commands, whole process, next to bare Python's.

    .venv/bin/python bench/startup.py [--repeats 15]

Each command runs as a user runs it (the installed `workbench` script, a fresh process,
Python's bytecode cache filled by one untimed run) on a small home: the golden v1 traces,
ingested once before timing, so `runs` finds nothing new, the common case. The reference is
`python -c pass` with the same interpreter, timed in the same rounds: every round runs each
command once, in turn, so load from other work on the machine falls on all of them alike.
Prints the median wall time of each and its CPU time (user + system, from the process's own
rusage: steadier on a shared machine), next to the targets: `workbench runs` < 0.15 s,
`workbench --help` < 0.1 s.

With `--instructions`, each command also runs once under valgrind's callgrind, which counts
the instructions it executes: a figure no other load on the machine changes (a few minutes;
needs valgrind).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "fixtures" / "traces" / "v1"
BIN = Path(sys.executable).parent
WORKBENCH = str(BIN / "workbench")

# (label, argv, target seconds or None)
COMMANDS: list[tuple[str, list[str], float | None]] = [
    ("python -c pass", [sys.executable, "-c", "pass"], None),
    ("workbench --help", [WORKBENCH, "--help"], 0.1),
    ("workbench runs", [WORKBENCH, "runs"], 0.15),
    ("workbench runs --json", [WORKBENCH, "runs", "--json"], 0.15),
    ("workbench show RUN", [WORKBENCH, "show", "RUN"], None),
    ("workbench run --help", [WORKBENCH, "run", "--help"], None),
]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one whole process."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read() if process.stderr else b""
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {stderr.decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime


def instructions(argv: list[str], env: dict[str, str]) -> int:
    """Instructions one whole process executes, all threads, counted by callgrind."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from valgrind: {done.stderr[-500:]}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15, help="rounds (default 15)")
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions (valgrind)"
    )
    args = parser.parse_args()
    if args.instructions and shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind on PATH")
    if not Path(WORKBENCH).exists():
        raise SystemExit(f"{WORKBENCH} not found: run scripts/test.sh once to install")

    with tempfile.TemporaryDirectory(prefix="wb-startup-") as scratch:
        home = Path(scratch) / "home"
        (home / "traces").mkdir(parents=True)
        for trace in sorted(GOLDEN.glob("*.jsonl")):
            shutil.copy(trace, home / "traces" / trace.name)
        env = dict(os.environ, WORKBENCH_HOME=str(home))
        # As installed: Python's bytecode cache on (one untimed run of each command fills
        # it), else every run would compile every module it imports.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run(
            [WORKBENCH, "ingest", str(home / "traces")], env=env, check=True, capture_output=True
        )
        run_id = sorted(GOLDEN.glob("*.jsonl"))[0].stem
        commands = [
            (label, [run_id if part == "RUN" else part for part in argv], target)
            for label, argv, target in COMMANDS
        ]
        for _, argv, _ in commands:
            timed(argv, env)
        walls: dict[str, list[float]] = {label: [] for label, _, _ in commands}
        cpus: dict[str, list[float]] = {label: [] for label, _, _ in commands}
        for _ in range(args.repeats):
            for label, argv, _ in commands:
                wall, cpu = timed(argv, env)
                walls[label].append(wall)
                cpus[label].append(cpu)
        counts = (
            {label: instructions(argv, env) for label, argv, _ in commands}
            if args.instructions
            else {}
        )

    bare_wall = statistics.median(walls[commands[0][0]])
    bare_cpu = statistics.median(cpus[commands[0][0]])
    print(f"median of {args.repeats} rounds, whole process, same rounds for every command")
    print(f"{'command':<24} {'wall s':>8} {'cpu s':>8} {'wall - bare':>12}  target")
    for label, _, target in commands:
        wall = statistics.median(walls[label])
        cpu = statistics.median(cpus[label])
        verdict = ""
        if target is not None:
            verdict = f"< {target:g} s: wall {'ok' if wall < target else 'OVER'}, "
            verdict += f"cpu {'ok' if cpu < target else 'OVER'}"
        extra = f"{wall - bare_wall:+12.3f}" if label != commands[0][0] else f"{'(reference)':>12}"
        print(f"{label:<24} {wall:8.3f} {cpu:8.3f} {extra}  {verdict}")
    print(f"bare python: wall {bare_wall:.3f} s, cpu {bare_cpu:.3f} s")
    if counts:
        bare = counts[commands[0][0]]
        print("instructions executed (callgrind, all threads), and as a multiple of bare python:")
        for label, _, _ in commands:
            print(f"{label:<24} {counts[label] / 1e6:8.0f} M  {counts[label] / bare:5.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
