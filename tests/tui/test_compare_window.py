"""Comparing two long runs: a window of turns at a time, read from the store by turn."""

from __future__ import annotations

from pathlib import Path

from tests.support.generated_runs import LONG, TURNS, long_run
from tests.tui.conftest import COMPLETED, notices, plain, settle
from workbench.tui import WorkbenchApp
from workbench.tui.diff_screens import ChainCompareScreen
from workbench.tui.document import Document
from workbench.tui.paged_list import PagedList

OTHER = "8" * 32


async def test_two_long_runs_compare_a_window_of_turns_at_a_time(home: Path) -> None:
    long_run(home / "traces", TURNS)
    # The same run but for turn 120's tool result.
    long_run(
        home / "traces", TURNS, run_id=OTHER, result=lambda turn: "changed" if turn == 120 else "ok"
    )
    app = WorkbenchApp(home)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, lambda: app.screen.query_one("#runs-list", PagedList).total >= 10)
        app.open_compare(LONG, OTHER)
        screen = app.screen
        assert isinstance(screen, ChainCompareScreen)

        def result() -> str:
            return plain(screen.query_one("#pair-result", Document))

        await settle(pilot, lambda: "compared" in result())
        shown = result()
        assert "turns 1-100 of 130 compared" in shown and "] next 100" in shown
        assert "The decision chains are the same." in shown  # turns 1-100 are
        assert "tool_of_turn_100" in shown and "tool_of_turn_101" not in shown

        await pilot.press("right_square_bracket")
        await settle(pilot, lambda: "turns 101-130" in result())
        shown = result()
        assert "[ previous 100" in shown and "tool_of_turn_100 " not in shown
        assert "First divergence at turn 120." in shown

        await pilot.press("right_square_bracket")
        await settle(pilot, lambda: any("No later turns" in n.message for n in notices(app)))
        await pilot.press("left_square_bracket")
        await settle(pilot, lambda: "turns 1-100 of 130" in result())


async def test_comparing_with_a_run_the_store_does_not_hold_names_it(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, lambda: app.screen.query_one("#runs-list", PagedList).total >= 8)
        app.open_compare(COMPLETED, OTHER)
        await settle(pilot, lambda: any(OTHER in n.message for n in notices(app)))
        assert "could not compute the diff" in plain(app.screen.query_one("#pair-result", Document))
        assert any(f"no run {OTHER}" in n.message for n in notices(app))
