"""Focus and keys (issue 25, item 3): escape closes the run's search bar, not the run; after
a filter is used, enter or escape hands the keys back to the runs list; a closed dropdown
never changes its value on the arrows."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Checkbox, Input, Select

from tests.tui.conftest import ERROR, settle
from workbench.tui import WorkbenchApp
from workbench.tui.paged_list import PagedList
from workbench.tui.run_screen import RunScreen
from workbench.tui.runs_screen import RunsScreen

SIZE = (160, 45)


def _runs(app: WorkbenchApp) -> PagedList:
    return app.screen.query_one("#runs-list", PagedList)


async def _runs_shown(pilot, app: WorkbenchApp) -> RunsScreen:
    await settle(pilot, lambda: _runs(app).total == 8 and _runs(app).row(2) is not None)
    assert isinstance(app.screen, RunsScreen)
    return app.screen


async def test_escape_after_a_run_search_closes_the_bar_not_the_run(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await _runs_shown(pilot, app)
        app.open_run(ERROR)
        await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        box = screen.query_one("#run-search", Input)
        await pilot.press("slash", *"2 + 3", "enter")  # the task and the answer
        await settle(pilot, lambda: len(screen.matches) >= 2 and screen.match_index == 0)
        assert box.display and app.focused is screen.chain_tree
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen, "escape left the run instead of closing the search bar"
        assert not box.display and app.focused is screen.chain_tree
        await pilot.press("n")  # the matches outlive the bar
        await settle(pilot, lambda: screen.match_index == 1)
        await pilot.press("slash", *"calc", "escape")  # typed, not submitted
        await settle(pilot)
        assert app.screen is screen and not box.display
        await pilot.press("escape")  # the bar is closed: now escape goes back
        await settle(pilot, lambda: isinstance(app.screen, RunsScreen))


async def test_a_chosen_dropdown_value_gives_the_arrows_back_to_the_list(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _runs_shown(pilot, app)
        status = screen.query_one("#filter-status", Select)
        status.focus()
        await pilot.press("enter")  # opens the menu
        await settle(pilot, lambda: status.expanded)
        await pilot.press("down", "enter")  # the first status
        await settle(pilot, lambda: status.value == "completed" and _runs(app).total == 1)
        assert app.focused is _runs(app), "enter on a menu choice kept the focus on the menu"
        await pilot.press("down", "down")  # moves the list, not the filter
        await settle(pilot)
        assert status.value == "completed" and not status.expanded
        status.focus()
        await pilot.press("escape")
        await settle(pilot)
        assert app.focused is _runs(app) and status.value == "completed"
        status.focus()
        await pilot.press("enter")  # the menu open, then escape: closed, nothing chosen
        await settle(pilot, lambda: status.expanded)
        await pilot.press("down", "escape")
        await settle(pilot)
        assert app.focused is _runs(app) and status.value == "completed"
        assert not status.expanded


async def test_arrows_on_a_closed_dropdown_move_the_list_not_the_filter(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _runs_shown(pilot, app)
        for select_id in ("#filter-status", "#filter-kind"):
            select = screen.query_one(select_id, Select)
            before = select.value
            _runs(app).move_to(0)
            select.focus()
            await pilot.press("down", "down", "up", "down")
            await settle(pilot)
            assert select.value == before and not select.expanded
            assert _runs(app).total == 8
            assert app.focused is _runs(app) and _runs(app).cursor == 2


async def test_the_failed_checkbox_and_the_text_filter_hand_back_the_keys(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _runs_shown(pilot, app)
        box = screen.query_one("#filter-failed", Checkbox)
        box.focus()
        await pilot.press("enter")
        await settle(pilot, lambda: box.value and _runs(app).total == 7)
        assert app.focused is _runs(app)
        await pilot.press("down")
        await settle(pilot, lambda: _runs(app).cursor == 1)
        box.focus()
        await pilot.press("escape")
        await settle(pilot)
        assert app.focused is _runs(app) and box.value  # escape leaves the filter as it is
        await pilot.press("slash", *"Compute")
        await settle(pilot, lambda: _runs(app).total == 1)
        await pilot.press("down")  # an arrow in the text filter goes to the list
        await settle(pilot)
        assert app.focused is _runs(app)
