"""The team's lake beside the home's store: push throughput and read latency, in one run.

    .venv-lake/bin/python bench/lake.py [--runs 2000 --events-per-run 50] [--rounds 5]

Needs the `lake` extra (`.venv-lake`, scripts/install-lake-services.sh) and PostgreSQL's
initdb: it starts what the tests start (tests/support/lake_services.py), a private
PostgreSQL cluster and moto's S3 server on loopback, writes a home of RUNS runs
(`bench.scale_data`, one search hit every SEARCH_EVERY runs) and ingests it, then measures:

- `push --all` into an empty lake: events per second, whole process (extensions, attach,
  every batch's commit), and a second push that finds nothing to send;
- `runs`, `show RUN` and `search WORD` as whole processes on the home's store and with
  `--lake`, median of `--rounds`, with the load average beside.

The lake's figures include what a remote catalog and bucket cost (here both on loopback:
PostgreSQL round trips per query, and S3 requests through moto, a Python server).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.scale_data import SEARCH_WORD, build_traces  # noqa: E402
from tests.support.lake_services import postgres_cluster, s3_server  # noqa: E402

WORKBENCH = str(Path(sys.executable).parent / "workbench")


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def timed(home: Path, *argv: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [WORKBENCH, "--home", str(home), *argv], capture_output=True, text=True, timeout=3600
    )
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"workbench {' '.join(argv)} failed: {done.stderr.strip()}")
    return took


def median(home: Path, rounds: int, *argv: str) -> float:
    return statistics.median(timed(home, *argv) for _ in range(rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--events-per-run", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wb-bench-lake-") as scratch:
        home = Path(scratch) / "home"
        written = build_traces(home, args.runs, args.events_per_run, long_events=0)
        events = int(str(written["events"]))
        print(f"home: {written['runs']} runs, {events} events; {load()}")
        timed(home, "runs")  # reads the traces into the store
        with postgres_cluster() as postgres, s3_server() as s3:
            os.environ.update(s3.env())
            lake = f"{postgres.uri(postgres.new_database())}?data=s3://{s3.new_bucket()}/bench/"
            pushed = timed(home, "push", "--all", "--lake", lake)
            again = timed(home, "push", "--all", "--lake", lake)
            print(
                f"push --all: {pushed:.1f} s, {events / pushed:,.0f} events/s; "
                f"again (nothing new): {again:.1f} s; {load()}"
            )
            run_id = sorted((home / "traces").glob("*.jsonl"))[0].stem
            print(f"{'command':<22} {'home store':>11} {'lake':>9}   (median of {args.rounds})")
            for argv in (["runs"], ["show", run_id], ["search", SEARCH_WORD]):
                local = median(home, args.rounds, *argv)
                on_lake = median(home, args.rounds, *argv, "--lake", lake)
                name = " ".join(argv[:1] + (["RUN"] if argv[0] == "show" else argv[1:]))
                print(f"{name:<22} {local:>9.2f} s {on_lake:>7.2f} s   {load()}")


if __name__ == "__main__":
    main()
