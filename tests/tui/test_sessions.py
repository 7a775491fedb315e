"""The TUI's session view (issue 39, part 6): from the runs list or from a run, `w` shows the
runs of its session in the order they ran with the session's totals; enter opens one."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Static

from tests.support.generated_runs import small_run
from tests.tui.conftest import plain, said, settle
from traces.events import SESSION_META
from workbench.tui import WorkbenchApp
from workbench.tui.run_screen import RunScreen
from workbench.tui.runs_screen import RunsScreen
from workbench.tui.session_screen import SessionScreen

FIRST, SECOND, ALONE = "1" * 32, "2" * 32, "3" * 32


def _home(tmp_path: Path) -> Path:
    folder = tmp_path / "home" / "traces"
    small_run(folder, ALONE, turns=1)  # part of no session
    small_run(folder, FIRST, turns=2, meta={SESSION_META: "chat-7"})
    small_run(folder, SECOND, turns=3, end=False, meta={SESSION_META: "chat-7"})
    return tmp_path / "home"


async def _session_shown(pilot, app: WorkbenchApp) -> SessionScreen:
    await settle(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.view)
    assert isinstance(app.screen, SessionScreen)
    return app.screen


async def test_a_runs_session_opens_from_the_run_and_lists_its_runs_in_order(
    tmp_path: Path,
) -> None:
    app = WorkbenchApp(_home(tmp_path))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, lambda: app.screen.query("#runs-list"))
        app.open_run(SECOND)
        await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
        await pilot.press("W")
        screen = await _session_shown(pilot, app)
        summary = plain(screen.query_one("#session-summary", Static))
        assert "session chat-7" in summary
        assert "2 runs · 3 turns" in summary and "1 completed, 1 incomplete" in summary
        table = screen.query_one(DataTable)
        assert [table.get_row_at(n)[1] for n in range(table.row_count)] == [
            FIRST[:8],
            SECOND[:8],
        ]
        await pilot.press("enter")  # the first run, where the cursor starts
        await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
        assert isinstance(app.screen, RunScreen) and app.screen.run_id == FIRST


async def test_the_runs_list_opens_a_session_and_says_when_a_run_has_none(
    tmp_path: Path,
) -> None:
    app = WorkbenchApp(_home(tmp_path))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, lambda: app.screen.query("#runs-list"))
        assert isinstance(app.screen, RunsScreen)
        app.open_run(ALONE)
        await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
        await pilot.press("W")
        await settle(pilot, lambda: any("part of no session" in m for m in said(app)))
        await pilot.press("escape")
        await settle(pilot, lambda: isinstance(app.screen, RunsScreen))
        await pilot.press("W")  # the newest run is highlighted: the session's second
        screen = await _session_shown(pilot, app)
        assert screen.session == "chat-7"
