"""`a` on a turn of the run screen adds it to a regression suite as a case, as `workbench
capture-case RUN --turn N --suite FILE` does; the suite then passes `workbench test` with
the demo's scripted model. With writes off the key is refused in one line."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from textual.widgets import Input, Static

from tests.support.demo import demo_run
from tests.support.in_process import wb
from tests.tui.conftest import COMPLETED, plain, settle
from workbench.engine.regress.suite import load_suite
from workbench.tui import WorkbenchApp
from workbench.tui.backend import Backend
from workbench.tui.help import HelpScreen
from workbench.tui.line_input import LineInput
from workbench.tui.paged_list import PagedList
from workbench.tui.run_screen import RunScreen

SIZE = (160, 45)


async def _at_turn(pilot, app: WorkbenchApp, run_id: str, downs: int) -> RunScreen:
    """The run screen of `run_id` with the tree's cursor `downs` rows down (on a turn)."""
    runs = app.screen.query_one("#runs-list", PagedList)
    await settle(pilot, lambda: runs.total > 0)  # the home's traces are in the store
    app.open_run(run_id)
    await settle(
        pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline is not None
    )
    run = app.screen
    assert isinstance(run, RunScreen)
    await pilot.press(*["down"] * downs)
    await settle(
        pilot,
        lambda: (node := run.chain_tree.selected()) is not None and node.turn is not None,
    )
    return run


async def _capture(pilot, app: WorkbenchApp, suite: str | None = None) -> str:
    """Press `a`, keep the dialog's suite or type `suite`, enter; the toast it gives."""
    said = len(app.notifications)
    await pilot.press("a")
    await settle(pilot, lambda: isinstance(app.screen, LineInput))
    box = app.screen.query_one("#case-suite", Input)
    if suite is not None:
        box.value = suite
    await pilot.press("enter")
    await settle(pilot, lambda: len(app.notifications) > said)
    return app.notifications[-1].message


async def test_a_key_on_a_turn_adds_it_to_a_suite_that_passes(
    demo_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    walk = demo_run(demo_home, "max-turns")
    default = demo_home / "suites" / "captured.wbsuite.toml"
    elsewhere = tmp_path / "mine" / "walk.wbsuite.toml"
    app = WorkbenchApp(demo_home, watch=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        run = await _at_turn(pilot, app, walk, 2)  # the run's start, then turn 1, turn 2
        selected = run.chain_tree.selected()
        assert selected is not None and selected.turn is not None
        turn = selected.turn
        await pilot.press("a")
        await settle(pilot, lambda: isinstance(app.screen, LineInput))
        # The default: a suite in the home, which `workbench test` and run_suite both run.
        assert app.screen.query_one("#case-suite", Input).value == str(default)
        await pilot.press("escape")  # nothing written
        await settle(pilot, lambda: app.screen is run)
        assert not default.exists()

        said = await _capture(pilot, app)
        assert said == (
            f"Added case '{walk[:8]}-t{turn}' to {default}: expect list_dir "
            f"(`workbench test {default}` runs it)"
        )
        assert [n.severity for n in app.notifications] == ["information"]
        # The same turn again: the suite refuses the id it has, in one line.
        said = await _capture(pilot, app)
        assert "appears twice" in said and app.notifications[-1].severity == "warning"

        await pilot.press("down")  # the next turn, into the suite typed in the dialog
        said = await _capture(pilot, app, str(elsewhere))
        assert said.startswith(f"Added case '{walk[:8]}-t{turn + 1}' to {elsewhere}")
        await pilot.press("a")  # the dialog now offers the suite used last
        await settle(pilot, lambda: isinstance(app.screen, LineInput))
        assert app.screen.query_one("#case-suite", Input).value == str(elsewhere)
        await pilot.press("escape")

    cases = load_suite(default).cases
    assert [(c.id, c.from_run, c.turn, c.expect_tool) for c in cases] == [
        (f"{walk[:8]}-t{turn}", walk, turn, "list_dir")
    ]
    assert (default.parent / "traces" / f"{walk}.jsonl").is_file()  # runs without the home
    script = demo_home / "demo-suite-script.json"
    # `workbench test` runs its own event loop: in a thread, beside the test's.
    code, out, err = await asyncio.to_thread(
        wb, demo_home, capsys, "test", str(default), "--script", str(script)
    )
    assert code == 0, out + err
    assert "1 passed" in out


async def test_with_writes_off_the_key_is_refused_in_one_line(home: Path) -> None:
    why = "opened with --read-only"
    app = WorkbenchApp(home, backend=Backend(home, writes_off=why), watch=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        run = await _at_turn(pilot, app, COMPLETED, 1)
        app.clear_notifications()  # the golden incomplete run's cut-off line, said on ingest
        await pilot.press("a")
        await settle(pilot, lambda: bool(app.notifications))
        assert [(n.message, n.severity) for n in app.notifications] == [
            (f"cannot capture a case: {why}", "warning")
        ]
        assert app.screen is run  # no dialog
    assert not (home / "suites").exists()


async def test_the_key_asks_for_a_turn_and_the_help_lists_it(home: Path) -> None:
    app = WorkbenchApp(home, watch=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await _at_turn(pilot, app, COMPLETED, 1)
        await pilot.press("up")  # the run's start
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await settle(pilot, lambda: getattr(screen.chain_tree.selected(), "turn", 0) is None)
        await pilot.press("a")  # the cursor is on the run's start
        await settle(pilot, lambda: bool(app.notifications))
        assert app.notifications[-1].message.startswith("Select a turn")
        await pilot.press("question_mark")
        await settle(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert re.search(r"^\s*a\s+Add case\s*$", plain(app.screen.query_one(Static)), re.M)
    assert not (home / "suites").exists()
