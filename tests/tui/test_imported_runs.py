"""A run imported from OpenTelemetry spans opens in the TUI like a recorded one."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from tests.tui.conftest import plain, run_shown, settle
from workbench.cli import main
from workbench.tui import WorkbenchApp
from workbench.tui.paged_list import PagedList
from workbench.tui.run_screen import RunScreen

pytest.importorskip("opentelemetry.proto", reason="needs the otel extra")

OTLP_JSON = Path(__file__).resolve().parents[1] / "interop" / "fixtures" / "genai-agent.json"


async def test_an_imported_run_opens_with_its_turns_and_tool_call(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    assert main(["--home", str(home), "ingest-otel", str(OTLP_JSON)]) == 0
    app = WorkbenchApp(home)
    async with app.run_test(size=(160, 45)) as pilot:
        runs = app.screen.query_one("#runs-list", PagedList)
        await settle(pilot, lambda: runs.total == 1 and runs.row(0) is not None)
        await pilot.press("enter")
        await run_shown(pilot)
        assert isinstance(app.screen, RunScreen)
        summary = plain(app.screen.query_one("#run-summary", Static))
        assert "How many lines does notes.txt have?" in summary
        assert "2 turns" in summary and "1 tool call" in summary
