"""Verify replay (`v`) runs in a process of its own: the screen shows how far it is, and the
process is gone once the user leaves the screen or quits, or says in one line that it died."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from tests.support.generated_runs import LONG, long_run
from tests.tui.conftest import notices, plain, settle
from workbench.tui import WorkbenchApp
from workbench.tui.paged_list import PagedList
from workbench.tui.replay_screen import ReplayScreen

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").is_file(), reason="finds the replay process in /proc"
)

SIZE = (160, 45)
# Long enough that its replay process is still reading it when the test acts (reading
# alone takes a second or more).
LONG_TURNS = 8000


def replay_processes() -> list[int]:
    """The processes this one started that run a replay and have not ended."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # ended meanwhile
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if int(parent) == os.getpid() and state != "Z" and b"recording.replay.process" in command:
            found.append(int(entry.name))
    return found


async def _until(pilot: Any, condition: Callable[[], object], tries: int = 1500) -> None:
    """Wait for `condition` while the verify worker runs (settle would wait for its end)."""
    for _ in range(tries):
        await pilot.pause(0.02)
        if condition():
            return
    raise AssertionError("the app did not reach the expected state")


def _verify_text(app: WorkbenchApp) -> str:
    screen = app.screen
    if not isinstance(screen, ReplayScreen):
        return ""
    return plain(screen.query_one("#replay-verify", Static), width=300)


async def _verifying(pilot: Any, app: WorkbenchApp) -> int:
    """Open the long run's replay verifying; returns its replay process once it reads."""
    await settle(pilot, lambda: app.screen.query_one("#runs-list", PagedList).total >= 9)
    app.open_replay(LONG, verify=True)
    await _until(pilot, lambda: "reading it" in _verify_text(app))
    (child,) = replay_processes()
    return child


@pytest.fixture
def long_home(home: Path) -> Path:
    long_run(home / "traces", LONG_TURNS)
    return home


async def test_verify_shows_its_progress_and_its_process_ends_with_the_screen(
    long_home: Path,
) -> None:
    app = WorkbenchApp(long_home)
    async with app.run_test(size=SIZE) as pilot:
        assert replay_processes() == []
        child = await _verifying(pilot, app)
        assert "verify replay: re-running offline from the recording… reading it, " in (
            _verify_text(app)
        )
        replay = app.screen
        await pilot.press("escape")  # back to the runs list, the replay still running
        assert app.screen is not replay
        await settle(pilot, lambda: child not in replay_processes())
        assert replay_processes() == []


async def test_quitting_while_verifying_stops_its_process(long_home: Path) -> None:
    app = WorkbenchApp(long_home)
    async with app.run_test(size=SIZE) as pilot:
        child = await _verifying(pilot, app)
        await pilot.press("q")
    assert child not in replay_processes()


async def test_a_verify_process_that_dies_is_one_line(long_home: Path) -> None:
    app = WorkbenchApp(long_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        child = await _verifying(pilot, app)
        os.kill(child, signal.SIGKILL)  # as the out-of-memory killer would
        await settle(pilot, lambda: "verify replay failed" in _verify_text(app))
        shown = _verify_text(app).strip()
        assert shown == (
            "verify replay failed: the replay process ended (killed by SIGKILL) before its outcome"
        )
        errors = [n for n in notices(app) if n.severity == "error"]
        assert [n.message for n in errors] == [
            "the replay process ended (killed by SIGKILL) before its outcome"
        ]
        assert isinstance(app.screen, ReplayScreen)  # the stepper still works
