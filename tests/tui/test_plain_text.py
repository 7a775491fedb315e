"""Text from traces, searches and errors shows as typed: brackets in it are never markup."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from tests.tui.conftest import plain, settle
from workbench.tui import WorkbenchApp
from workbench.tui.app import error_line
from workbench.tui.paged_list import PagedList

SIZE = (160, 45)


def _runs(app: WorkbenchApp) -> PagedList:
    return app.screen.query_one("#runs-list", PagedList)


async def test_a_search_for_a_closing_tag_is_shown_not_parsed(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot, lambda: _runs(app).total == 8)
        await pilot.press("ctrl+f", *"[/INST]", "enter")
        said = "No run contains '[/INST]'."
        await settle(pilot, lambda: said in [n.message for n in app._notifications])
        await pilot.pause()  # the toast paints
        assert app.is_running
        assert "containing '[/INST]'" in plain(app.screen.query_one("#runs-count", Static))


async def test_an_error_cut_inside_a_bracket_is_a_notification(home: Path) -> None:
    detail = "x" * 220 + " [type=extra_forbidden, input_value='y', input_type=str]"
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot, lambda: _runs(app).total == 8)
        shown = error_line(ValueError(detail))
        assert "[type=extra_forb" in shown and shown.endswith("…")
        app.report_error(ValueError(detail))
        await settle(pilot, lambda: shown in [n.message for n in app._notifications])
        await pilot.pause()  # the toast paints
        assert app.is_running
