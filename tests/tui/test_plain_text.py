"""Text from traces, searches and errors shows as typed: brackets in it are never markup."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from textual.widgets import Select, Static

from tests.tui.conftest import plain, said, settle
from workbench.engine.views.search import SEARCHED
from workbench.tui import WorkbenchApp
from workbench.tui.app import error_line
from workbench.tui.fork_screen import ForkScreen
from workbench.tui.paged_list import PagedList

SIZE = (160, 45)


def _runs(app: WorkbenchApp) -> PagedList:
    return app.screen.query_one("#runs-list", PagedList)


async def test_a_search_for_a_closing_tag_is_shown_not_parsed(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot, lambda: _runs(app).total == 8)
        await pilot.press("ctrl+f", *"[/INST]", "enter")
        told = f"No run contains '[/INST]' ({SEARCHED})."
        await settle(pilot, lambda: told in said(app))
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
        await settle(pilot, lambda: shown in said(app))
        await pilot.pause()  # the toast paints
        assert app.is_running


def _run_reading(tmp_path: Path, content: str) -> Path:
    """A home with one run that read a file holding `content`, then answered."""
    from workbench.cli import main

    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text(content)
    home = tmp_path / "home"
    call = {"id": "call_a", "name": "read_file", "arguments": {"path": "a.txt"}}
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [call]}, {"content": "read it"}]))
    run = ["run", "Read a.txt", "--script", str(script), "--root", str(project)]
    assert main([*run, "--home", str(home)]) == 0
    return home


async def test_a_tool_result_with_a_closing_tag_shows_in_the_fork_dialog(tmp_path: Path) -> None:
    home = await asyncio.to_thread(_run_reading, tmp_path, "[/INST] the end\n")
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: _runs(app).total == 1 and _runs(app).row(0) is not None)
        run_id = _runs(app).row(0).run_id  # type: ignore[union-attr]
        app.open_fork(run_id, 2)
        await settle(
            pilot, lambda: isinstance(app.screen, ForkScreen) and app.screen.context is not None
        )
        calls = app.screen.query_one("#fork-call", Select)
        calls.focus()
        await pilot.press("enter")  # the choices show the call's result
        await pilot.pause()
        assert app.is_running and calls.expanded
