"""Search in a long run (`/`, `n`, `N`) reads the run's matches from the store a page at a
time: every match is reachable and counted, and the search holds no more memory in a long
run than in a short one (it read the JSON of every matching event, 66 MB more for a
200,000-event run)."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path
from typing import Any

from textual.app import App

from tests.support.generated_runs import varied_run
from tests.tui.conftest import settle
from traces.store import TraceStore
from workbench.engine.views.search import RUN_PAGE, search
from workbench.tui import WorkbenchApp
from workbench.tui.backend import Backend
from workbench.tui.run_screen import RunScreen

SIZE = (160, 45)
SHORT, LONG = "1" * 32, "2" * 32
# Every turn but the last calls read_file: "read" is in each of those tool_starts.
WORD = "read"


def _home(tmp_path: Path, runs: dict[str, int]) -> Path:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    for run_id, turns in runs.items():
        varied_run(home / "traces", run_id, turns, reuse_ids=False, rounds_kept=3)
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
    return home


def _rss_mb(field: str = "VmRSS") -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith(field + ":"))
    return int(line.split()[1]) / 1000


def _peak_from_here() -> float:
    """The RSS now; the peak (`VmHWM`) is counted from here on."""
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # resets the peak to the RSS now
    return _rss_mb()


async def _open(pilot, app: WorkbenchApp, run_id: str) -> RunScreen:  # type: ignore[no-untyped-def]
    app.open_run(run_id)
    await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
    screen = app.screen
    assert isinstance(screen, RunScreen)
    return screen


def _said(app: App[Any]) -> str:
    notices = list(app._notifications)
    return notices[-1].message if notices else ""


async def _search(pilot, screen: RunScreen, text: str) -> None:  # type: ignore[no-untyped-def]
    screen.app.clear_notifications()
    await pilot.press("slash", *text, "enter")
    await settle(pilot, lambda: _said(screen.app).startswith("match 1 of"))


def _at_seq(screen: RunScreen, seq: int) -> bool:
    node = screen.chain_tree.cursor_node
    return node is not None and node.data is not None and seq in node.data.seqs()


async def test_every_match_of_a_long_run_is_reached_a_page_at_a_time(tmp_path: Path) -> None:
    turns = 2 * RUN_PAGE + 30  # three pages of matches
    home = _home(tmp_path, {LONG: turns})
    with TraceStore.for_home(home) as store:  # the events the whole, unpaged search finds
        seqs = sorted({hit.seq for hit in search(store, WORD, run_id=LONG, limit=10**6)})
    total = len(seqs)
    assert total > 2 * RUN_PAGE
    app = WorkbenchApp(home, ingest=False, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _open(pilot, app, LONG)
        await _search(pilot, screen, WORD)
        assert _said(app).startswith(f"match 1 of {total} · turn 1 · tool name: read_file")
        assert screen.found is not None and len(screen.found.hits) == RUN_PAGE
        await pilot.press("N")  # around to the last match, on the last page
        await settle(pilot, lambda: _said(app).startswith(f"match {total} of {total}"))
        assert screen.found.offset == 2 * RUN_PAGE and screen.found.hits[-1].seq == seqs[-1]
        await settle(pilot, lambda: _at_seq(screen, seqs[-1]))
        await pilot.press("n")  # and on to the first again
        await settle(pilot, lambda: _said(app).startswith(f"match 1 of {total} · turn 1"))
        assert screen.match_index == 0 and screen.found.offset == 0
        for _ in range(RUN_PAGE):  # across a page's end, one match at a time
            await pilot.press("n")
        await settle(pilot, lambda: _said(app).startswith(f"match {RUN_PAGE + 1} of {total}"))
        assert screen.found.offset == RUN_PAGE
        await settle(pilot, lambda: _at_seq(screen, seqs[RUN_PAGE]))


def test_searching_a_long_run_holds_no_more_memory_than_a_short_one(tmp_path: Path) -> None:
    home = _home(tmp_path, {SHORT: 20, LONG: 3000})
    # Each search in a process of its own (the store's memory is not Python's, and an app
    # that opened a run holds memory the search would reuse): what it grew is its own.
    grown = {run_id: _search_grew(home, run_id) for run_id in (SHORT, LONG)}
    # The long run has 150 times the short one's events and matches (reading the JSON of
    # every match grew it by 25 MB more than the short run's; 59 MB at 25,000 turns).
    assert grown[LONG] < grown[SHORT] + 8, grown


def _search_grew(home: Path, run_id: str) -> float:
    done = subprocess.run(
        [sys.executable, "-m", "tests.tui.test_long_run_search", str(home), run_id],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return float(done.stdout.split()[-1])


def _peak_of_search(home: Path, run_id: str) -> float:
    """MB the process grew to, over what it held, while the TUI's backend found the run's
    first and last matches (`/` then `N`)."""
    backend = Backend(home)
    backend.search_run("no such text", run_id)  # the store opened, its queries known
    before = _peak_from_here()
    first = backend.search_run(WORD, run_id)
    last = first.total - 1
    backend.search_run(WORD, run_id, last - last % RUN_PAGE)
    return _rss_mb("VmHWM") - before


if __name__ == "__main__":  # one search, in a process of its own
    print(_peak_of_search(Path(sys.argv[1]), sys.argv[2]))
