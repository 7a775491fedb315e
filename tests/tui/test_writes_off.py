"""The TUI with writes off (`workbench tui --read-only`, and what `workbench web` serves
without --allow-writes): the home is browsed and new traces are picked up, but a fork and
an export are refused in one line each, and nothing is written for them."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from tests.tui.conftest import COMPLETED, plain, settle, writes_refused
from workbench.tui import WorkbenchApp
from workbench.tui.backend import Backend
from workbench.tui.paged_list import PagedList

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

        await writes_refused(pilot, COMPLETED, WHY)
    assert not (home / "exports").exists()
    assert sorted((home / "traces").iterdir()) == traces  # no fork's trace
