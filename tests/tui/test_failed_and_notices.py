"""The TUI on the demo's home (its runs and its suite's samples): the failed filter is the
store's rule, a stopped run's last text is not called an answer, and a broken prices file
is a notice."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Static

from tests.support.demo import demo_run
from tests.tui.conftest import notices, plain, settle
from traces.home import traces_dir
from traces.tree import NOT_AN_ANSWER
from workbench.engine.recording.runs.load import read_recording_file
from workbench.tui import WorkbenchApp
from workbench.tui.paged_list import PagedList
from workbench.tui.render import render_event
from workbench.tui.run_screen import RunScreen

SIZE = (160, 45)


@pytest.fixture
def home(demo_copy: Path) -> Path:
    return demo_copy


def _runs(app: WorkbenchApp) -> PagedList:
    return app.screen.query_one("#runs-list", PagedList)


async def test_failed_only_shows_the_runs_that_failed_not_the_suites_samples(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: _runs(app).total == 6)  # 6 runs; the 9 samples folded
        await pilot.press("f")
        # The demo's four stopped runs; its samples end max_turns by design and passed.
        await settle(pilot, lambda: _runs(app).total == 4 and _runs(app).row(3) is not None)
        rows = [_runs(app).row(i) for i in range(4)]
        assert {getattr(row, "origin", None) for row in rows} == {"agent"}
        assert "4 runs" in plain(app.screen.query_one("#runs-count", Static))


def test_a_stopped_runs_end_names_its_last_text_as_not_an_answer(home: Path) -> None:
    loop = read_recording_file(traces_dir(home) / f"{demo_run(home, 'duplicate-call-loop')}.jsonl")
    console = Console(width=120, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(render_event(loop.events[-1]))
    shown = console.export_text()
    assert NOT_AN_ANSWER in shown and "final answer" not in shown


async def test_a_broken_prices_file_is_a_notice_on_the_run(home: Path) -> None:
    (home / "prices.toml").write_text("[models.x\ninput = 1\n", encoding="utf-8")
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot, lambda: _runs(app).total == 6)
        app.open_run(demo_run(home, "completed"))
        await settle(
            pilot,
            lambda: (
                isinstance(app.screen, RunScreen)
                and app.screen.outline is not None
                and bool(notices(app))
            ),
        )
        [notice] = [n for n in notices(app) if "prices.toml" in n.message]
        assert notice.severity == "warning" and "not a readable TOML file" in notice.message
        assert "\n" not in notice.message
