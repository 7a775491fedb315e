"""The answers' figures beside their targets (issue 38): `workbench failures` over the
scale home of `bench/scale.py` against a plain `select status, count(*) … group by status`
over the same store, both as whole processes (what a person waits for).

    .venv/bin/python bench/answers.py [--failures-runs 1000000] [--cache bench/.cache]

The home is `bench/scale.py`'s (built and ingested there, or here when missing: that takes
a while); `--runs` picks which size of it.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.scale import WORKBENCH, cache_dir, load, output, timed  # noqa: E402
from bench.scale_data import build_traces  # noqa: E402

FAILURES_TARGET = 3.0  # at most this many times the plain group-by


def scale_home(runs: int, cache: Path | None) -> Path:
    """`bench/scale.py`'s home of `runs` small runs (10 events each, no long run), its
    traces written and ingested once."""
    home = cache_dir(cache) / f"scale-r{runs}-e10-l0"
    build_traces(home, runs, 10, 0)
    if not (home / "workbench.duckdb").is_file():
        print(f"ingesting {home / 'traces'} once (a while) …", flush=True)
        output([WORKBENCH, "ingest", str(home / "traces")], home)
    return home


def failures_figure(home: Path, rounds: int = 3) -> float:
    """Print `workbench failures` against the plain group-by over the same store, and the
    ratio beside its target; returns the ratio."""
    before = load()
    plain, _ = timed(
        [WORKBENCH, "sql", "select status, count(*) from runs group by status"], home, rounds
    )
    failures, _ = timed([WORKBENCH, "failures", "--json"], home, rounds)
    ratio = failures / plain
    verdict = "met" if ratio <= FAILURES_TARGET else "NOT met"
    print(f"failures over {home.name} ({before} .. {load()}), whole processes, median of {rounds}:")
    print(f"  select status, count(*) … group by status   {plain:.3f} s")
    print(f"  workbench failures --json                    {failures:.3f} s")
    print(f"  ratio {ratio:.2f}×   target ≤ {FAILURES_TARGET:.0f}× ({verdict})")
    return ratio
