"""`w` on a failed run opens Why (issue 38, part 3): its causes ranked by the forks that
verified them, with no model configured (serve-model over the passing run of its task)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from tests.support.why_runs import WhyHome, why_home
from tests.tui.conftest import plain, settle
from workbench.tui import WorkbenchApp
from workbench.tui.run_screen import RunScreen
from workbench.tui.why_screen import WhyScreen


@pytest.fixture
def known(tmp_path: Path) -> WhyHome:
    return why_home(tmp_path, decoy=False)  # made outside the test's event loop


async def test_w_on_a_failed_run_shows_the_cause_its_fork_flipped(known: WhyHome) -> None:
    app = WorkbenchApp(known.home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: app.screen.query("#runs-list"))
        app.open_run(known.failing)
        await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
        await pilot.press("w")
        await settle(pilot, lambda: isinstance(app.screen, WhyScreen) and app.screen.report)
        screen = app.screen
        assert isinstance(screen, WhyScreen) and screen.report is not None
        text = plain(screen.query_one("#why", Static))
        assert f"why run {known.failing} ended duplicate_tool_calls" in text
        assert "1. " in text and "✔ verified: fixed in 3 of 3 samples" in text
        assert "call_s1_0" in text

        forks = screen.report.causes[0].verification.forks
        await pilot.press("o")  # the top cause's first fork: a run of its own
        await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
        assert isinstance(app.screen, RunScreen) and app.screen.run_id == forks[0]
