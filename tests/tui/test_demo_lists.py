"""What the runs list shows of the demo's home (issue 42): a fork made in the TUI is listed
as soon as the user is back on the list, without waiting for the traces folder's watcher."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import Select, Static

from tests.support.demo import demo_run
from tests.tui.conftest import COMPLETED, GOLDEN, notices, plain, said, settle
from workbench.cli import main
from workbench.tui import WorkbenchApp
from workbench.tui.diff_screens import ChainCompareScreen
from workbench.tui.fork_screen import ForkScreen
from workbench.tui.paged_list import PagedList
from workbench.tui.runs_screen import RunsScreen

SIZES = [(200, 50), (80, 24)]


@pytest.fixture
def home(demo_copy: Path) -> Path:
    return demo_copy


def _runs(app: WorkbenchApp) -> PagedList:
    return app.screen.query_one("#runs-list", PagedList)


def _count_line(app: WorkbenchApp) -> str:
    return plain(app.screen.query_one("#runs-count", Static))


@pytest.mark.parametrize("size", SIZES)
async def test_a_fork_made_in_the_tui_is_listed_when_the_user_is_back(
    home: Path, size: tuple[int, int]
) -> None:
    parent = demo_run(home, "completed")
    # No watcher: the fork must be listed by the TUI's own doing, not by a file event.
    app = WorkbenchApp(home, watch=False)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, lambda: _runs(app).total > 0)
        before = _runs(app).total
        app.open_run(parent)
        await settle(pilot, lambda: getattr(app.screen, "outline", None) is not None)
        app.open_fork(parent, 2)
        await settle(
            pilot, lambda: isinstance(app.screen, ForkScreen) and app.screen.context is not None
        )
        await pilot.press("ctrl+r")
        await settle(pilot, lambda: isinstance(app.screen, ChainCompareScreen))
        while not isinstance(app.screen, RunsScreen):
            await pilot.press("escape")
            await pilot.pause()
        await settle(pilot, lambda: _runs(app).total == before + 1)
        assert f"{before + 1} runs" in _count_line(app)


@pytest.mark.parametrize("size", SIZES)
async def test_a_tool_name_is_found_in_the_run(home: Path, size: tuple[int, int]) -> None:
    app = WorkbenchApp(home, watch=False)
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot, lambda: _runs(app).total > 0)
        app.open_run(demo_run(home, "completed"))
        await settle(pilot, lambda: getattr(app.screen, "outline", None) is not None)
        await pilot.press("slash", *"calculator", "enter")
        await settle(pilot, lambda: any("calculator" in n.message for n in notices(app)))
        told = said(app)
        assert not any("not in this run" in line for line in told), told
        assert any("tool name: calculator" in line for line in told), told
        await pilot.press("slash", "ctrl+a", *"nothing like this", "enter")
        await settle(pilot, lambda: any("not in this run" in n.message for n in notices(app)))
        missing = next(n.message for n in notices(app) if "not in this run" in n.message)
        assert "searched tasks, messages, tool names, arguments and results" in missing


@pytest.mark.parametrize("size", SIZES)
async def test_suite_samples_are_folded_and_listed_when_their_kind_is_chosen(
    home: Path, size: tuple[int, int]
) -> None:
    app = WorkbenchApp(home, watch=False)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, lambda: _runs(app).total == 6 and _runs(app).row(5) is not None)
        assert {getattr(_runs(app).row(i), "origin", None) for i in range(6)} == {"agent"}
        assert "6 runs · 9 suite samples folded (kind: sample lists them)" in _count_line(app)
        kind = app.screen.query_one("#filter-kind", Select)
        kind.value = "regression_sample"
        await settle(pilot, lambda: _runs(app).total == 9 and _runs(app).row(0) is not None)
        assert "9 runs" in _count_line(app) and "folded" not in _count_line(app)
        assert "max_turns" not in "".join(_runs(app).render_line(y).text for y in range(9))
        shown = _runs(app).render_line(0).text  # the first row, as the screen shows it
        assert "✔ case passed" in shown and "max_turns" not in shown


@pytest.mark.parametrize("size", SIZES)
async def test_an_empty_home_says_how_to_get_runs(tmp_path: Path, size: tuple[int, int]) -> None:
    home = tmp_path / ".workbench"  # what a first bare `workbench` in a folder opens
    (home / "traces").mkdir(parents=True)
    app = WorkbenchApp(home, watch=False)
    async with app.run_test(size=size) as pilot:
        empty = app.screen.query_one("#runs-empty", Static)
        await settle(pilot, lambda: empty.display and getattr(app.screen, "ingests", 0) == 1)
        said = plain(empty)
        for command in ("workbench demo", 'workbench run "TASK"', "workbench proxy"):
            assert command in said, said
        region = empty.region  # on screen, whole, at this size
        assert region.height >= 6 and region.bottom <= size[1] and region.right <= size[0]
        steps = [line for line in said.splitlines() if line.startswith("  workbench")]
        assert len(steps) == 5 and all(len(line.rstrip()) + 4 <= size[0] for line in steps)

        shutil.copy(GOLDEN / f"{COMPLETED}.jsonl", home / "traces")
        await pilot.press("g")
        await settle(pilot, lambda: _runs(app).total == 1)
        assert not empty.display


def test_runs_in_an_empty_home_says_how_to_get_some(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "home").mkdir()
    assert main(["--home", str(tmp_path / "home"), "runs"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("No runs yet in ")
    for command in ("workbench demo", 'workbench run "TASK"', "workbench proxy"):
        assert command in said
