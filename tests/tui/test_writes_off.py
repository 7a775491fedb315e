"""The TUI with writes off (`workbench tui --read-only`, and what `workbench web` serves
without --allow-writes): the home is browsed and new traces are picked up, but a fork and
an export are refused in one line each, and nothing is written for them."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from tests.tui.conftest import COMPLETED, has_said, plain, settle
from workbench.tui import WorkbenchApp
from workbench.tui.backend import Backend
from workbench.tui.paged_list import PagedList
from workbench.tui.run_screen import RunScreen

SIZE = (160, 45)
WHY = "opened with --read-only"


async def test_with_writes_off_forks_and_exports_are_refused(home: Path) -> None:
    traces = sorted((home / "traces").iterdir())
    app = WorkbenchApp(home, backend=Backend(home, writes_off=WHY), watch=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        runs = app.screen.query_one("#runs-list", PagedList)
        notice = app.screen.query_one("#read-only-notice", Static)
        # The golden traces were never ingested: they are picked up all the same.
        await settle(pilot, lambda: runs.total > 0 and notice.display)
        assert f"read-only: {WHY}" in plain(notice)

        app.open_run(COMPLETED)
        await settle(
            pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline is not None
        )
        run = app.screen
        assert isinstance(run, RunScreen)
        await pilot.press("x")
        await settle(pilot, lambda: has_said(app, f"cannot export the run: {WHY}"))

        await pilot.press("down")  # turn 1
        await settle(
            pilot,
            lambda: (
                (node := run.chain_tree.cursor_node) is not None
                and node.data is not None
                and node.data.turn is not None
            ),
        )
        await pilot.press("f")
        await settle(pilot, lambda: has_said(app, f"cannot fork: {WHY}"))
        assert app.screen is run
    assert not (home / "exports").exists()
    assert sorted((home / "traces").iterdir()) == traces  # no fork's trace
