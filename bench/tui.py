"""TUI benchmark: time until each screen is interactive on a big store, driven by Pilot.

    .venv/bin/python bench/tui.py [--runs 100000 --events 20000] [--data bench/.data]
    .venv/bin/python bench/tui.py --home HOME --big RUN   # a home already built and ingested

Builds (once per size, under bench/.data/) a home folder with `--runs` small runs and one
run of `--events` events, ingests it with the store's bulk ingest, then opens the App
headless and prints, per screen, the time from the keypress to the first useful frame
(rows on screen, tree filled, event shown). Target: < 1 s each. It also prints how much the
process grows while the replay stepper walks the whole big run, next to the same walk on a
small run: memory should stay at the page cache, not grow with the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.ingest import template_run  # noqa: E402
from traces.store import TraceStore  # noqa: E402

TARGET_S = 1.0
STATUSES = ("completed", "completed", "completed", "error", "max_turns", "timeout")


def small_run(run_id: str, index: int) -> str:
    """A two-line run: enough for the runs list, varied so filters have work to do."""
    status = STATUSES[index % len(STATUSES)]
    start = {
        "run_id": run_id,
        "seq": 0,
        "ts": f"2026-01-01T00:00:00.{index % 1_000_000:06d}Z",
        "turn": None,
        "type": "run_start",
        "schema_version": 1,
        "task": f"task {index}: find the bug in module {index % 97}",
        "model": "gpt-4o-mini",
    }
    end = {
        "run_id": run_id,
        "seq": 1,
        "ts": f"2026-01-01T00:00:01.{index % 1_000_000:06d}Z",
        "turn": None,
        "type": "run_end",
        "status": status,
        "reason": status,
        "totals": {"turns": index % 7, "tool_calls": index % 5, "total_tokens": 100 + index % 900},
    }
    return json.dumps(start) + "\n" + json.dumps(end) + "\n"


def build(data: Path, runs: int, events: int) -> tuple[Path, str]:
    home = data / f"tui-{runs}-{events}"
    marker = home / ".complete"
    if marker.exists():
        return home, marker.read_text().strip()
    shutil.rmtree(home, ignore_errors=True)
    folder = home / "traces"
    folder.mkdir(parents=True)
    started = time.perf_counter()
    for index in range(runs):
        run_id = uuid.uuid4().hex
        (folder / f"{run_id}.jsonl").write_text(small_run(run_id, index))
    big = uuid.uuid4().hex
    lines = template_run(events)
    (folder / f"{big}.jsonl").write_text(
        "\n".join(lines).replace("RUNIDRUNIDRUNIDRUNIDRUNIDRUNID00", big) + "\n"
    )
    print(
        f"wrote {runs:,} runs + 1 run of {events:,} events in {time.perf_counter() - started:.1f}s"
    )
    started = time.perf_counter()
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
    print(f"ingested in {time.perf_counter() - started:.1f}s")
    marker.write_text(big + "\n")
    return home, big


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * 4096 / 1e6


async def measure(home: Path, big: str, trace_files: int) -> list[tuple[str, float]]:
    from workbench.tui import WorkbenchApp
    from workbench.tui.paged_list import PagedList
    from workbench.tui.replay_screen import ReplayScreen
    from workbench.tui.run_screen import RunScreen

    results: list[tuple[str, float]] = []
    app = WorkbenchApp(home)

    async def until(label: str, ready: Callable[[], bool], started: float) -> None:
        while not ready():
            await pilot.pause()
        results.append((label, time.perf_counter() - started))

    started = time.perf_counter()
    async with app.run_test(size=(160, 45)) as pilot:

        def runs_list() -> PagedList:
            return app.screen.query_one("#runs-list", PagedList)

        await until(
            "runs list: app start to first rows", lambda: runs_list().row(0) is not None, started
        )
        # The startup ingest check runs behind the list; time it, then measure the screens.
        t = time.perf_counter()
        while app.screen._ingest_pending:  # it starts once the first rows have settled
            await pilot.pause()
        await app.workers.wait_for_complete()
        checked = time.perf_counter() - t
        print(f"background ingest check of {trace_files:,} trace files: {checked:.1f}s")

        t = time.perf_counter()
        await pilot.press("end")
        await until(
            "runs list: jump to the last of all runs",
            lambda: runs_list().row(runs_list().cursor) is not None,
            t,
        )

        t = time.perf_counter()
        await pilot.press("f")
        await until(
            "runs list: failed-only filter",
            lambda: runs_list().row(0) is not None and runs_list().row(0).status != "completed",
            t,
        )

        t = time.perf_counter()
        app.open_run(big)
        await until(
            "run screen: the long run's outline",
            lambda: isinstance(app.screen, RunScreen) and app.screen.outline is not None,
            t,
        )
        run = app.screen
        assert isinstance(run, RunScreen)

        t = time.perf_counter()
        last_turn = run._turn_tree_node(run.outline.turns)
        last_turn.expand()
        await until("run screen: expand its last turn", lambda: bool(last_turn.children), t)

        t = time.perf_counter()
        await pilot.press("e")  # no failure in the big run: a full scan for one
        await until("run screen: find first error (none)", lambda: bool(app._notifications), t)

        t = time.perf_counter()
        await pilot.press("r")
        await until(
            "replay stepper: first event",
            lambda: (
                isinstance(app.screen, ReplayScreen)
                and app.screen.timeline.total > 0
                and app.screen.timeline.row(0) is not None
            ),
            t,
        )
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        t = time.perf_counter()
        await pilot.press("end")
        await until(
            "replay stepper: jump to the last event",
            lambda: replay.timeline.row(replay.timeline.total - 1) is not None,
            t,
        )

        # Walk the whole run page by page, as scrolling would, and watch the process size.
        before = rss_mb()
        timeline = replay.timeline
        for index in range(0, timeline.total, timeline.page_size):
            timeline.move_to(index)
            while timeline.row(index) is None:
                await pilot.pause()
        grown = rss_mb() - before
        print(
            f"RSS {rss_mb():.0f} MB; walking all {timeline.total:,} events "
            f"grew it by {grown:.1f} MB"
        )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        allow_abbrev=False,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / ".data")
    parser.add_argument("--home", type=Path, help="measure this home (built and ingested)")
    parser.add_argument("--big", help="the long run of --home")
    args = parser.parse_args()
    if args.home is not None:
        if not args.big:
            parser.error("--home needs --big RUN")
        home, big = args.home, args.big
        trace_files = sum(1 for _ in (home / "traces").iterdir())
    else:
        home, big = build(args.data, args.runs, args.events)
        trace_files = args.runs + 1
    results = asyncio.run(measure(home, big, trace_files))
    print(f"\n{'screen':<46} {'time to interactive':>20}")
    worst = 0.0
    for label, seconds in results:
        worst = max(worst, seconds)
        flag = "" if seconds < TARGET_S else "  over target"
        print(f"{label:<46} {seconds * 1000:>17.0f} ms{flag}")
    print(f"\nworst {worst * 1000:.0f} ms (target < {TARGET_S * 1000:.0f} ms)")
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
