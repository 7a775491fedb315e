"""TUI benchmark: time until each screen is interactive on a big store, driven by Pilot.

    .venv/bin/python bench/tui.py [--runs 100000 --events 20000] [--data bench/.data]
    .venv/bin/python bench/tui.py --home HOME --big RUN   # a home already built and ingested

Builds (once per size and schema version, under bench/.data/) a home folder with `--runs`
small runs and one run of `--events` events, ingests it with the store's bulk ingest, then
opens the App headless and prints, per screen, the time from the keypress to the first useful frame
(rows on screen, tree filled, event shown). Target: < 1 s each. It also prints how much the
process grows while the replay stepper walks the whole big run, next to the same walk on a
small run: memory should stay at the page cache, not grow with the run.

Then every other screen a user opens on the big run, each timed the same way with how much
the process grew while it opened: the timeline (its first and next window of turns), the
schema diff and the chain comparison with a small run and with itself, the fork dialog and
its dry-run plan, export and verify replay (each until its notice shows, then to its end
with the longest the screen went without a frame meanwhile: the notice and that frame are
held to the target, the end, which takes as long as the run is long, is printed apart),
search inside the run (`/`, `n`).
`--no-screens` leaves those out, `--no-walk` the stepper's walk. With `--copy-store`, `--home`
is measured on a copy of its store (made once under `--data`, without the traces folder, so
there is no startup ingest check to time): the home itself is then only read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.ingest import template_run  # noqa: E402
from traces.store import TraceStore  # noqa: E402
from traces.versions import SCHEMA_VERSION  # noqa: E402
from workbench.tui.backend import RunFilter  # noqa: E402

TARGET_S = 1.0
SCREEN_CAP_S = 120.0  # a screen not ready by then is reported and left
# How often a screen is looked at while it gets ready. Pilot's bare `pause()` waits for the
# whole process to go idle (up to a second): a screen whose worker still computes once it
# is ready was timed up to a second late, and that second counted as a frozen frame. A
# pause of a delay waits for the screen's messages to be handled, then that long.
POLL_S = 0.01
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
        "schema_version": SCHEMA_VERSION,
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
    # Per schema version: runs an older workbench wrote would be migrated line by line.
    home = data / f"tui-{runs}-{events}-v{SCHEMA_VERSION}"
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


# (screen, MB the process grew while it opened), filled by `measure_screens`
memory: list[tuple[str, float]] = []
# (work a screen started, seconds to its end): long work that shows its progress meanwhile,
# printed beside the screens and not held to their target
outcomes: list[tuple[str, float]] = []


async def measure(
    home: Path, big: str, trace_files: int, screens: bool = True, walk: bool = True
) -> list[tuple[str, float]]:
    from workbench.tui import WorkbenchApp
    from workbench.tui.paged_list import PagedList
    from workbench.tui.replay_screen import ReplayScreen
    from workbench.tui.run_screen import RunScreen

    results: list[tuple[str, float]] = []
    app = WorkbenchApp(home)

    async def until(label: str, ready: Callable[[], bool], started: float) -> None:
        while not ready():
            await pilot.pause(POLL_S)
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
            await pilot.pause(POLL_S)
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

        if walk:
            # Walk the whole run page by page, as scrolling would, and watch the process size.
            before = rss_mb()
            timeline = replay.timeline
            for index in range(0, timeline.total, timeline.page_size):
                timeline.move_to(index)
                while timeline.row(index) is None:
                    await pilot.pause(POLL_S)
            grown = rss_mb() - before
            print(
                f"RSS {rss_mb():.0f} MB; walking all {timeline.total:,} events "
                f"grew it by {grown:.1f} MB"
            )
        app.pop_screen()
        await pilot.pause(POLL_S)
        if screens:
            await measure_screens(app, pilot, big, results)
    return results


def shown(screen: Any, selector: str) -> str | None:
    """What a Static of the screen shows now, as plain text; None before it is mounted. Of
    a Document (the diff screens' result), what it was given once its lines are drawn."""
    from textual.css.query import NoMatches

    from workbench.tui.document import Document

    try:
        widget = screen.query_one(selector)
    except NoMatches:
        return None
    if isinstance(widget, Document) and not widget.rendered:
        return None
    return str(widget.content)


async def measure_screens(app: Any, pilot: Any, big: str, results: list[tuple[str, float]]) -> None:
    """Every other screen a user can open on the long run: the time from the key press to
    its first useful frame, and how much the process grew while it opened."""
    from workbench.tui.diff_screens import PairScreen
    from workbench.tui.fork_screen import ForkScreen
    from workbench.tui.replay_screen import ReplayScreen
    from workbench.tui.run_screen import RunScreen
    from workbench.tui.timeline_screen import TimelineScreen

    run = app.screen
    assert isinstance(run, RunScreen)
    small = next(r.run_id for r in app.backend.runs(RunFilter(), 0, 2) if r.run_id != big)

    async def timed(
        label: str, press: Callable[[], object], ready: Callable[[], bool], back: bool = True
    ) -> None:
        before, started = rss_mb(), time.perf_counter()
        press()
        while not ready():
            if time.perf_counter() - started > SCREEN_CAP_S:
                break
            await pilot.pause(POLL_S)
        seconds = time.perf_counter() - started
        results.append((label, seconds))
        memory.append((label, rss_mb() - before))
        print(f"{label}: {seconds * 1000:.0f} ms, RSS +{memory[-1][1]:.1f} MB", flush=True)
        if seconds > SCREEN_CAP_S:
            print(f"{label}: not ready after {SCREEN_CAP_S:.0f} s, left behind")
        if back and app.screen is not run:
            app.pop_screen()
            await pilot.pause(POLL_S)

    def notified(*words: str) -> Callable[[], bool]:
        seen = len(app._notifications)
        return lambda: (
            len(app._notifications) > seen
            and any(word in n.message for n in list(app._notifications)[seen:] for word in words)
        )

    def timeline_ready() -> bool:
        screen = app.screen
        return isinstance(screen, TimelineScreen) and screen.view is not None

    await timed("timeline: first window", lambda: run.action_timeline(), timeline_ready, False)
    timeline = app.screen
    if isinstance(timeline, TimelineScreen) and hasattr(timeline, "action_window"):
        first = timeline.view
        await timed(
            "timeline: next window",
            lambda: timeline.action_window(1),
            lambda: timeline.view is not first,
        )
    elif app.screen is not run:
        app.pop_screen()
        await pilot.pause(POLL_S)

    def pair_ready(loading: str) -> Callable[[], bool]:
        def ready() -> bool:
            screen = app.screen
            text = shown(screen, "#pair-result") if isinstance(screen, PairScreen) else None
            return text is not None and text != loading

        return ready

    schemas, chains = "diffing tool schemas…", "aligning decision chains…"
    for label, opener, loading, other in (
        ("schema diff (d): long run vs a small one", app.open_schema_diff, schemas, small),
        ("compare (c): long run vs a small one", app.open_compare, chains, small),
        ("compare (c): long run vs itself", app.open_compare, chains, big),
    ):
        await timed(label, lambda o=opener, b=other: o(big, b), pair_ready(loading))

    def fork_ready() -> bool:
        screen = app.screen
        return isinstance(screen, ForkScreen) and screen.context is not None

    def plan_ready() -> bool:
        screen = app.screen
        text = shown(screen, "#fork-plan") if isinstance(screen, ForkScreen) else None
        return text is not None and text != "planning…"

    last_turn = run.outline.last_turn if run.outline else 1
    started = time.perf_counter()
    await timed(
        "fork dialog (f): history of the last turn",
        lambda: app.open_fork(big, last_turn),
        fork_ready,
        False,
    )
    while not plan_ready() and time.perf_counter() - started < SCREEN_CAP_S:
        await pilot.pause(POLL_S)
    results.append(("fork dialog: its dry-run plan", time.perf_counter() - started))
    if app.screen is not run:
        app.pop_screen()
        await pilot.pause(POLL_S)

    # Export writes a long run a window of turns at a time: its notice shows at once, its
    # progress as it goes, and the screen keeps drawing frames until it is written.
    done = notified("Exported", "cannot")
    before, started = rss_mb(), time.perf_counter()
    # (An export that says nothing until it is done has its notice shown then.)
    notice = notified("Exporting", "Exported", "cannot")
    await timed("export (x): its notice shown", run.action_export, notice, False)
    stall, last = 0.0, time.perf_counter()
    while not done() and time.perf_counter() - started < SCREEN_CAP_S:
        await pilot.pause(POLL_S)
        now = time.perf_counter()
        stall, last = max(stall, now - last), now
    # The file takes as long as the run is long (as verify's outcome below): what must be
    # within the target is its notice and every frame the screen draws meanwhile.
    written = time.perf_counter() - started
    outcomes.append(("export (x): the whole run written as Markdown", written))
    memory.append(("export (x): the run as Markdown", rss_mb() - before))
    results.append(("export: longest frozen frame", stall))
    print(f"export: written in {written:.1f} s; the screen stalled {stall * 1000:.0f} ms at most")
    for notice in list(app._notifications):  # the home keeps no export of the bench
        if notice.message.startswith("Exported the run as Markdown to "):
            os.unlink(notice.message.removeprefix("Exported the run as Markdown to "))

    search = run.query_one("#run-search")

    def search_for(text: str) -> Callable[[], object]:
        def press() -> None:
            run.action_search()
            search.value = text
            search.post_message(search.Submitted(search, text))

        return press

    await timed(
        "search in the run (/): first match",
        # Every tool result of the long run says it: the search with the most matches.
        search_for("return"),
        notified("match 1 of", "is not in"),
    )
    await timed(
        "search in the run: next match (n)",
        lambda: run.action_next_match(1),
        notified("match 2 of", "match 1 of 1"),
    )

    # Verify may take long; it must show that it runs and never freeze the screen.
    def verify_shown() -> bool:
        screen = app.screen
        return isinstance(screen, ReplayScreen) and bool(shown(screen, "#replay-verify"))

    await timed("verify replay (v): its progress shown", run.action_verify, verify_shown, False)
    replay = app.screen
    started, stall, last = time.perf_counter(), 0.0, time.perf_counter()
    while isinstance(replay, ReplayScreen) and "re-running" in (
        shown(replay, "#replay-verify") or ""
    ):
        if time.perf_counter() - started > SCREEN_CAP_S:
            break
        await pilot.pause(POLL_S)
        now = time.perf_counter()
        stall, last = max(stall, now - last), now
    done = time.perf_counter() - started
    outcomes.append(("verify replay (v): its outcome", done))
    print(
        f"verify replay: {done:.1f} s to its outcome; the screen stalled "
        f"{stall * 1000:.0f} ms at most"
    )
    results.append(("verify replay: longest frozen frame", stall))


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
    parser.add_argument(
        "--no-screens",
        action="store_true",
        help="only the runs list, run screen and stepper (not timeline, diffs, fork, export…)",
    )
    parser.add_argument(
        "--no-walk", action="store_true", help="do not walk the stepper through the whole run"
    )
    parser.add_argument(
        "--copy-store",
        action="store_true",
        help="measure a copy of --home's store (no traces folder), leaving --home only read",
    )
    args = parser.parse_args()
    if args.home is not None:
        if not args.big:
            parser.error("--home needs --big RUN")
        home, big = args.home, args.big
        if args.copy_store:
            home = scratch_copy(args.home, args.data)
        trace_files = sum(1 for _ in (home / "traces").iterdir()) if not args.copy_store else 0
    else:
        home, big = build(args.data, args.runs, args.events)
        trace_files = args.runs + 1
    results = asyncio.run(measure(home, big, trace_files, not args.no_screens, not args.no_walk))
    print(f"\n{'screen':<46} {'time to interactive':>20}")
    worst = 0.0
    for label, seconds in results:
        worst = max(worst, seconds)
        flag = "" if seconds < TARGET_S else "  over target"
        print(f"{label:<46} {seconds * 1000:>17.0f} ms{flag}")
    print(f"\nworst {worst * 1000:.0f} ms (target < {TARGET_S * 1000:.0f} ms)")
    if outcomes:
        print(f"\n{'long work, its progress shown meanwhile':<46} {'to its end':>20}")
        for label, seconds in outcomes:
            print(f"{label:<46} {seconds * 1000:>17.0f} ms")
    if memory:
        print(f"\n{'screen':<46} {'RSS growth':>20}")
        for label, grown in memory:
            print(f"{label:<46} {grown:>17.1f} MB")
    return 0 if worst < TARGET_S else 1


def scratch_copy(home: Path, data: Path) -> Path:
    """A home holding a copy of `home`'s store and no traces folder: the screens that write
    (export, the startup ingest check) write there, and `home` is only read (the runs' trace
    files are found from the store's `source_path`, where the engine reads a recording)."""
    source = home / "workbench.duckdb"
    if not source.is_file():
        raise SystemExit(f"{home} has no workbench.duckdb: build and ingest it first")
    copy = data / f"copy-of-{home.name}"
    target = copy / "workbench.duckdb"
    stamp = copy / ".copied-from"
    wanted = f"{source.resolve()} {source.stat().st_size} {source.stat().st_mtime_ns}"
    if not target.is_file() or not stamp.is_file() or stamp.read_text() != wanted:
        shutil.rmtree(copy, ignore_errors=True)
        copy.mkdir(parents=True)
        shutil.copyfile(source, target)
        stamp.write_text(wanted)
    shutil.rmtree(copy / "traces", ignore_errors=True)
    shutil.rmtree(copy / "exports", ignore_errors=True)
    return copy


if __name__ == "__main__":
    raise SystemExit(main())
