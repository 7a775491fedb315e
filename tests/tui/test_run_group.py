"""The N-run view (issue 38): the runs of one task, steps down and the path and each variant
across, opened from the runs list with `C`; enter opens a run at its divergent step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Static

from tests.support.failing_runs import KNOWN_GROUP, runs_of_one_task
from tests.tui.conftest import plain, settle
from workbench.tui import WorkbenchApp
from workbench.tui.group_screen import RunGroupScreen
from workbench.tui.paged_list import PagedList
from workbench.tui.run_screen import RunScreen

SIZE = (200, 50)


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    runs_of_one_task(home / "traces", KNOWN_GROUP)
    return home


async def _opened(pilot: Any, app: WorkbenchApp) -> RunGroupScreen:
    await settle(pilot, lambda: app.screen.query_one("#runs-list", PagedList).total == 21)
    await pilot.press("C")
    await settle(
        pilot,
        lambda: isinstance(app.screen, RunGroupScreen) and app.screen.comparison is not None,
    )
    screen = app.screen
    assert isinstance(screen, RunGroupScreen)
    return screen


async def test_the_view_shows_the_path_and_the_variants_collapsed(tmp_path: Path) -> None:
    app = WorkbenchApp(_home(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _opened(pilot, app)
        table = screen.query_one("#group-table")
        titles = [str(column.label) for column in table.columns.values()]  # type: ignore[attr-defined]
        assert titles[:3] == ["step", "path · 6 runs", "#1 · 7 runs, 3 failed"]
        assert len(titles) == 2 + 7 and table.row_count == 4  # type: ignore[attr-defined]
        summary = plain(screen.query_one("#group-summary", Static))
        assert "21 runs (the runs of the task of" in summary
        assert "11 passed, 10 failed" in summary
        # Down the first variant's column: where its runs left the path, what they did.
        cells = [plain_cell(table.get_cell_at((row, 2))) for row in range(4)]  # type: ignore[attr-defined]
        assert cells[0].startswith("search_files") and cells[1:] == ["", "", ""]
        args_column = next(i for i, t in enumerate(titles) if t.startswith("#2"))
        assert plain_cell(table.get_cell_at((0, args_column))) == "│"  # type: ignore[attr-defined]
        detail = plain(screen.query_one("#group-detail", Static))
        assert "7 runs called `search_files` where the passing runs called `list_dir`" in detail


async def test_enter_opens_the_variants_first_run_at_its_divergent_step(tmp_path: Path) -> None:
    app = WorkbenchApp(_home(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await _opened(pilot, app)
        comparison = screen.comparison
        assert comparison is not None
        variant = next(v for v in comparison.variants if v.departure.how == "tool_error")
        column = 2 + comparison.variants.index(variant)
        table = screen.query_one("#group-table")
        table.move_cursor(row=0, column=column)  # type: ignore[attr-defined]
        await pilot.pause()
        assert "got an error from `read_file`" in plain(screen.query_one("#group-detail", Static))

        await pilot.press("enter")

        def at_step() -> bool:
            run = app.screen
            node = run.chain_tree.cursor_node if isinstance(run, RunScreen) else None
            return node is not None and node.data is not None and node.data.kind == "tool"

        await settle(pilot, at_step)
        run = app.screen
        assert isinstance(run, RunScreen) and run.run_id == variant.run_ids[0]
        node = run.chain_tree.cursor_node
        assert node is not None and node.data is not None
        assert node.data.turn == 2 and node.data.seq == variant.departure.step.seq
        assert node.data.failed


def plain_cell(cell: Any) -> str:
    return cell.plain if hasattr(cell, "plain") else str(cell)
