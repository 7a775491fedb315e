"""The comparison screen shows every status a call can have: a run whose repeated call was
refused (the demo's duplicate-call run, and every fork of it) once made it fail with
"could not compute the diff"."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from tests.tui.conftest import plain, settle
from traces.store import TraceStore
from workbench.cli import main
from workbench.engine.diff.alignment import CALL_STATUSES
from workbench.tui import WorkbenchApp
from workbench.tui.diff_screens import CALL_MARKS, ChainCompareScreen
from workbench.tui.document import Document


def test_every_call_status_has_a_mark() -> None:
    assert set(CALL_MARKS) == set(CALL_STATUSES)


@pytest.fixture
def demo_home(tmp_path: Path) -> Path:
    home = tmp_path / "demo"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["--home", str(home), "demo", "--no-tui"]) == 0
    return home


async def test_compare_a_run_with_a_refused_call(demo_home: Path) -> None:
    with TraceStore.for_home(demo_home) as store:
        by_status = {run.status: run.run_id for run in store.runs()}
    app = WorkbenchApp(demo_home)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        app.open_compare(by_status["duplicate_tool_calls"], by_status["completed"])
        await settle(pilot, lambda: isinstance(app.screen, ChainCompareScreen))
        screen = app.screen
        await settle(
            pilot, lambda: "aligning" not in plain(screen.query_one("#pair-result", Document))
        )
        shown = plain(screen.query_one("#pair-result", Document))
        assert "could not" not in shown
        assert '⊘ search_files({"query": "TODO"}) → not run' in shown
