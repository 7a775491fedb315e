"""What a user sees at 80x24 and at 200x50 (issue 42, items 2.6 and 2.9): every number
whole, the run count on screen, compare's texts given the room, the overview's titles
whole, the fork dialog's Run button and keys above the fold; the replay stepper opens on
its event and numbers events as the trace does; the runs list names the filters it
applies. Read from the screen as drawn, not from the widgets' own lines."""

from __future__ import annotations

import shutil
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static
from textual.widgets._footer import FooterKey

from tests.support.demo import demo_run
from tests.support.generated_runs import long_run
from tests.tui.conftest import notices, settle
from traces.home import traces_dir
from workbench.cli import main
from workbench.tui import WorkbenchApp
from workbench.tui.diff_screens import ChainCompareScreen
from workbench.tui.fork_screen import ForkScreen
from workbench.tui.overview_screen import OverviewScreen
from workbench.tui.paged_list import PagedList
from workbench.tui.replay_screen import ReplayScreen

SIZES = [(80, 24), (200, 50)]
EXTRA_RUNS = 20  # more runs than 24 rows show, so the list scrolls at 80x24
LONG_MODEL = "gpt-4o-mini-2024-07-18-ft-acme-support"  # a fine-tuned model's long name


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("small") / "home"
    assert main(["--home", str(home), "demo", "--no-tui"]) == 0
    for i in range(1, EXTRA_RUNS + 1):  # run i: i turns, 3i(i+1)/2 tokens (up to 630)
        model = LONG_MODEL if i % 2 else "gpt-4o-mini"
        long_run(traces_dir(home), i, run_id=f"{i:02d}" * 16, counted=True, model=model)
    return home


@pytest.fixture
def home(demo_home: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    # Without the store: it names the traces by the first home's paths, and reading them
    # here would say so about each one (a notice over the screen being read).
    shutil.copytree(demo_home, copy, ignore=shutil.ignore_patterns("*.duckdb*"))
    return copy


def screen_lines(app: WorkbenchApp) -> list[str]:
    """The terminal's lines as drawn (the compositor's, scrollbars and all)."""
    strips = app.screen._compositor.render_strips()
    return ["".join(segment.text for segment in strip) for strip in strips]


def _runs(app: WorkbenchApp) -> PagedList[Any]:
    return app.screen.query_one("#runs-list", PagedList)


def _at_cursor(timeline: PagedList[Any]) -> bool:
    return bool(timeline.total) and timeline.row(timeline.cursor) is not None


async def _loaded(pilot: Pilot[Any], app: WorkbenchApp) -> PagedList[Any]:
    runs = _runs(app)
    total = 6 + EXTRA_RUNS
    await settle(pilot, lambda: runs.total == total and runs.row(total - 1) is not None)
    return runs


@pytest.mark.parametrize("size", SIZES)
async def test_the_runs_list_shows_every_number_whole_and_its_count(
    home: Path, size: tuple[int, int]
) -> None:
    app = WorkbenchApp(home, watch=False)
    async with app.run_test(size=size) as pilot:
        runs = await _loaded(pilot, app)
        for _ in range(2):  # at the top, then scrolled to the end
            lines = screen_lines(app)
            top = round(runs.scroll_offset.y)
            shown = range(top, min(runs.total, top + runs.scrollable_content_region.height))
            for index in shown:
                row = runs.row(index)
                assert row is not None
                line = next(line for line in lines if row.run_id[:8] in line)
                cells = line.split()
                assert str(row.total_tokens) in cells, (row.total_tokens, line)
                assert str(row.turns) in cells and str(row.tool_calls) in cells, line
            header = next(line for line in lines if " task " in line and " turns " in line)
            assert "tokens" in header.split(), header
            assert any("26 runs" in line for line in lines), "\n".join(lines)
            await pilot.press("end")
            await settle(pilot)


@pytest.mark.parametrize("size", SIZES)
async def test_a_search_with_failed_only_on_names_the_filter(
    home: Path, size: tuple[int, int]
) -> None:
    app = WorkbenchApp(home, watch=False)
    async with app.run_test(size=size, notifications=True) as pilot:
        runs = await _loaded(pilot, app)
        await pilot.press("f")
        await settle(pilot, lambda: runs.total == 4)
        count = app.screen.query_one("#runs-count", Static)
        await settle(pilot, lambda: "failed only" in str(count.content))
        await pilot.press("ctrl+f", *"list_dir", "enter")
        await settle(pilot, lambda: "containing 'list_dir'" in str(count.content))
        told = [n.message for n in notices(app) if "'list_dir' is in" in n.message]
        assert told and "filters on: failed only" in told[0], told
        app.clear_notifications()  # a toast covers the line it is about
        await settle(pilot)
        said = next(line for line in screen_lines(app) if "containing 'list_dir'" in line)
        assert f"{runs.total} run{'s' if runs.total != 1 else ''} containing 'list_dir'" in said
        assert "failed only" in said, said
        # Every filter the list applies is named where its results are counted.
        app.screen.query_one("#filter-text", Input).value = "the"
        await settle(pilot, lambda: "task or id: 'the'" in str(count.content))
        assert "failed only" in str(count.content)


@pytest.mark.parametrize("size", SIZES)
async def test_the_replay_opens_on_its_event_numbered_as_the_trace(
    home: Path, size: tuple[int, int]
) -> None:
    run_id = f"{EXTRA_RUNS:02d}" * 16  # 20 turns: 82 events
    app = WorkbenchApp(home, watch=False)
    async with app.run_test(size=size) as pilot:
        await _loaded(pilot, app)
        for seq in (60, 81, 3):
            app.open_replay(run_id, seq)
            await settle(pilot, lambda: isinstance(app.screen, ReplayScreen))
            timeline = app.screen.query_one("#replay-timeline", PagedList)
            await settle(pilot, partial(_at_cursor, timeline))
            assert timeline.cursor == seq
            lines = screen_lines(app)
            rows = [line.split() for line in lines]
            assert any(cells[:1] == [str(seq)] for cells in rows), f"seq {seq} is off screen"
            position = next(line for line in lines if "paused" in line)
            assert f"seq {seq} of 0–81" in position, position
            assert "event " not in position  # one numbering: the trace's seq
            await pilot.press("escape")
            await settle(pilot, lambda: not isinstance(app.screen, ReplayScreen))


@pytest.mark.parametrize("size", SIZES)
async def test_compare_gives_the_runs_the_room_not_the_verdict(
    home: Path, size: tuple[int, int]
) -> None:
    app = WorkbenchApp(home, watch=False)
    async with app.run_test(size=size) as pilot:
        await _loaded(pilot, app)
        app.open_compare(demo_run(home, "completed"), demo_run(home, "max-turns"))
        await settle(pilot, lambda: isinstance(app.screen, ChainCompareScreen))
        await settle(pilot, lambda: "verdict" in "".join(screen_lines(app)))
        head = next(line for line in screen_lines(app) if "verdict" in line)
        borders = [i for i, ch in enumerate(head) if ch == "┃"]
        widths = [right - left for left, right in pairwise(borders)]
        *_, side_a, side_b, verdict = widths
        assert verdict <= 19, head  # "first divergence" and its room
        assert side_a >= 24 and side_b >= 24, head


@pytest.mark.parametrize("size", SIZES)
async def test_the_overview_shows_its_titles_and_figures_whole(
    home: Path, size: tuple[int, int]
) -> None:
    app = WorkbenchApp(home, watch=False)
    async with app.run_test(size=size) as pilot:
        await _loaded(pilot, app)
        await pilot.press("o")
        await settle(pilot, lambda: isinstance(app.screen, OverviewScreen) and app.screen.stats)
        await pilot.pause()
        lines = screen_lines(app)
        start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["model"])
        table = [line for line in lines[start:] if line.strip()][:3]
        titles = ["runs", "failed", "tokens", "p50", "p95"]
        assert table[0].split() == ["model", *titles], table
        for line in table[1:]:  # a long model name may end in "…", a figure never
            assert not any("…" in cell for cell in line.split()[-len(titles) :]), line
            assert "█" in line, line  # the runs as a bar, still there


def _footer_whole(app: WorkbenchApp) -> str:
    """The footer as drawn, after checking that every key it holds shows whole in it."""
    footer = screen_lines(app)[-1]
    for key in app.screen.query(FooterKey):
        assert f"{key.key_display} {key.description}" in footer, (key.description, footer)
    return footer


@pytest.mark.parametrize("size", SIZES)
async def test_the_fork_dialog_shows_run_and_every_key(home: Path, size: tuple[int, int]) -> None:
    parent = demo_run(home, "completed")
    app = WorkbenchApp(home, watch=False)
    async with app.run_test(size=size) as pilot:
        await _loaded(pilot, app)
        app.open_run(parent)
        await settle(pilot, lambda: getattr(app.screen, "outline", None) is not None)
        app.open_fork(parent, 2)
        await settle(
            pilot, lambda: isinstance(app.screen, ForkScreen) and app.screen.context is not None
        )
        fork = app.screen
        await pilot.pause()
        lines = screen_lines(app)
        assert any("Run fork" in line for line in lines), "Run is below the fold"
        assert any("mock a recorded tool result (calls made" in line for line in lines)
        footer = _footer_whole(app)
        for key in ("esc Back", "^r Run fork", "f2 System", "f3 User", "f4 Tool", "f5 Mock"):
            assert key in footer, footer
        await pilot.press("f2")  # in a text box
        await settle(pilot, lambda: app.focused is fork.query_one("#fork-text"))
        _footer_whole(app)
        await pilot.press("ctrl+r")  # run it: the comparison opens, then come back
        await settle(pilot, lambda: isinstance(app.screen, ChainCompareScreen))
        await pilot.press("escape")
        await settle(pilot, lambda: app.screen is fork)
        await pilot.pause()
        assert "^o Compare" in _footer_whole(app)
        assert any("Run fork" in line for line in screen_lines(app))
