"""The comparison screen shows every status a call can have: a run whose repeated call was
refused (the demo's duplicate-call run, and every fork of it) once made it fail with
"could not compute the diff"."""

from __future__ import annotations

from pathlib import Path

from tests.tui.conftest import pair_result, settle
from traces.store import TraceStore
from workbench.engine.diff.alignment import CALL_STATUSES
from workbench.tui import WorkbenchApp
from workbench.tui.diff_screens import CALL_MARKS, ChainCompareScreen


def test_every_call_status_has_a_mark() -> None:
    assert set(CALL_MARKS) == set(CALL_STATUSES)


async def test_compare_a_run_with_a_refused_call(demo_copy: Path) -> None:
    with TraceStore.for_home(demo_copy) as store:
        by_status = {run.status: run.run_id for run in store.runs()}
    app = WorkbenchApp(demo_copy)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        app.open_compare(by_status["duplicate_tool_calls"], by_status["completed"])
        shown = await pair_result(pilot, ChainCompareScreen, "aligning")
        assert "could not" not in shown
        assert '⊘ search_files({"query": "TODO"}) → not run' in shown
