"""The timeline of a long run: a window of turns at a time, read from the store by turn,
with the whole run's figures in its header."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.generated_runs import LONG, TURNS, long_run
from tests.tui.conftest import COMPLETED, notices, settle
from workbench.tui import WorkbenchApp
from workbench.tui.paged_list import PagedList
from workbench.tui.timeline_screen import TimelineScreen, Waterfall


@pytest.fixture
def long_home(home: Path) -> Path:
    long_run(home / "traces", TURNS)
    (home / "prices.toml").write_text('[models."gpt-4o-mini"]\ninput = 10.0\noutput = 10.0\n')
    return home


def shown(app: WorkbenchApp) -> str:
    return str(app.screen.query_one("#timeline", Waterfall).render())


async def open_timeline(pilot, app: WorkbenchApp, run_id: str, runs: int) -> TimelineScreen:
    """Once the home's `runs` runs are listed (ingested), the timeline of `run_id`."""
    await settle(pilot, lambda: app.screen.query_one("#runs-list", PagedList).total >= runs)
    app.open_timeline(run_id)
    await settle(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.view)
    assert isinstance(app.screen, TimelineScreen)
    return app.screen


async def test_a_long_run_opens_on_its_first_window_and_moves_with_the_keys(
    long_home: Path,
) -> None:
    app = WorkbenchApp(long_home)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_timeline(pilot, app, LONG, 9)
        text = shown(app)
        assert "turns 1-100 of 130 shown" in text and "] next" in text
        assert "turn 1 " in text and "turn 100 " in text and "turn 101 " not in text
        assert "tool_of_turn_100" in text and "tool_of_turn_101" not in text
        # The whole run's figures, counted after the window shows: 130 turns, the sum of n
        # in and of 2n out (8,515 and 17,030 tokens), at $10 a million tokens.
        totals = "130 turns  ·  8515 in / 17.0k out tokens  · $0.255"
        await settle(pilot, lambda: totals in shown(app))

        first = screen.view
        await pilot.press("right_square_bracket")
        await settle(pilot, lambda: screen.view is not first)
        text = shown(app)
        assert "turns 101-130 of 130 shown" in text and "[ previous" in text
        assert "turn 101 " in text and "turn 130 " in text and "turn 100 " not in text
        assert totals in text

        second = screen.view
        await pilot.press("right_square_bracket")  # nothing after the last window
        await settle(pilot, lambda: any("No later turns" in n.message for n in notices(app)))
        assert screen.view is second

        await pilot.press("left_square_bracket")
        await settle(pilot, lambda: screen.view is not second)
        assert "turns 1-100 of 130 shown" in shown(app)


async def test_a_short_run_shows_every_turn_and_says_so_on_the_window_keys(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_timeline(pilot, app, COMPLETED, 8)
        assert screen.view is not None and screen.view.window is None
        assert " shown" not in shown(app)
        await pilot.press("right_square_bracket")
        await settle(pilot, lambda: any("Every turn" in n.message for n in notices(app)))


@pytest.mark.parametrize("ended", [True, False], ids=["ended", "cut off before run_end"])
def test_a_window_holds_the_same_turns_as_the_whole_timeline(home: Path, ended: bool) -> None:
    from traces.store import TraceStore
    from workbench.engine.views.outline import turn_summaries
    from workbench.engine.views.timeline import (
        TIMELINE_TYPES,
        build_timeline,
        run_tokens,
        stored_timeline,
    )

    long_run(home / "traces", TURNS, ended)
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        whole = build_timeline(store.events(LONG, types=TIMELINE_TYPES))
        first = stored_timeline(store, LONG, home)
        second = stored_timeline(store, LONG, home, start=100)
        tokens = run_tokens(turn_summaries(store, LONG, None).values())
    assert first.window is not None and first.window.shown == (1, 100)
    assert first.timeline.turns == whole.turns[:100]
    assert second.window is not None and second.window.shown == (101, 130)
    assert second.timeline.turns == whole.turns[100:]
    # The whole run's duration, also when its last event is in a turn not shown.
    assert first.timeline.end_ms == pytest.approx(whole.end_ms, abs=0.001)
    assert second.tokens is None  # counted apart: they read every turn
    assert tokens == (whole.input_tokens, whole.output_tokens)


async def test_the_timeline_of_the_run_screen_takes_its_tokens_from_the_outline(
    long_home: Path,
) -> None:
    from workbench.tui.run_screen import RunScreen

    app = WorkbenchApp(long_home)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, lambda: app.screen.query_one("#runs-list", PagedList).total >= 9)
        app.open_run(LONG)
        await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
        await pilot.press("t")
        await settle(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.view)
        assert isinstance(app.screen, TimelineScreen) and app.screen.run_tokens == (8515, 17030)
        assert "130 turns  ·  8515 in / 17.0k out tokens  · $0.255" in shown(app)
