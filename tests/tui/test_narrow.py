"""At 80x24, the smallest usual terminal (issue 25, item 9): the runs list keeps its turns,
tools and tokens, and the regressions screen keeps its key columns; the rest folds away
(into the detail pane, where the regressions screen had more to say)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Static

from tests.tui.conftest import ERROR, plain, settle
from tests.tui.test_journey import store_suite_results
from workbench.tui import WorkbenchApp
from workbench.tui.paged_list import PagedList
from workbench.tui.regress_screen import RegressScreen
from workbench.tui.widgets.runs_list import RunsHeader

SIZE = (80, 24)


def _line(widget: PagedList, y: int) -> str:
    return "".join(segment.text for segment in widget.render_line(y))


async def test_the_runs_list_keeps_turns_tools_and_tokens_at_80_columns(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        runs = app.screen.query_one("#runs-list", PagedList)
        await settle(pilot, lambda: runs.total == 8 and runs.row(7) is not None)
        header = app.screen.query_one("#runs-header", RunsHeader).render().plain.split()
        for title in ("run", "task", "status", "turns", "tools", "tokens"):
            assert title in header, f"{title} folded away at 80 columns: {header}"
        rows = [runs.row(i) for i in range(8)]
        index = next(i for i, r in enumerate(rows) if r is not None and r.run_id == ERROR)
        row = rows[index]
        assert row is not None
        cells = _line(runs, index).split()
        assert ERROR[:8] in cells
        assert str(row.turns) in cells and str(row.tool_calls) in cells
        assert str(row.total_tokens) in cells
        # The task still has room to be read.
        assert "Compute (2 + 3)" in _line(runs, index)


async def test_the_regressions_screen_keeps_its_key_columns_at_80_columns(home: Path) -> None:
    store_suite_results(home)
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.screen.query_one("#runs-list", PagedList).total == 8)
        await pilot.press("R")
        await settle(pilot, lambda: isinstance(app.screen, RegressScreen) and app.screen.runs)
        screen = app.screen
        runs = screen.query_one("#suite-runs", DataTable)
        cases = screen.query_one("#suite-cases", DataTable)
        await settle(pilot, lambda: cases.row_count == 2)
        for table, key in (
            (runs, {"suite", "passed", "started"}),
            (cases, {"case", "rate", "status"}),
        ):
            titles = {str(column.label) for column in table.columns.values()}
            assert key <= titles, f"{table.id} lost {key - titles}"
            # Every column shown fits: nothing hides past the right edge.
            assert table.virtual_size.width <= table.scrollable_content_region.width, table.id
        body = screen.query_one("#case-body", Static)
        shown = plain(body, 78)
        # What folded away is in the detail of the selected suite run.
        assert "model m" in shown and "baseline v1" in shown
        await pilot.press("tab", "down")  # the regressed case: its baseline rate in the detail
        await settle(pilot, lambda: "baseline 100%" in plain(body, 78))
