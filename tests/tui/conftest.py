"""Shared pieces of the TUI tests: a home folder of golden traces, one of the demo's runs, and
Pilot helpers that wait for workers and their messages instead of sleeping."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static
from textual.worker import WorkerCancelled, WorkerFailed

from tests.support.golden import GOLDEN as GOLDEN  # the TUI tests import it from here
from tests.support.golden import golden_traces_in
from workbench.cli import main
from workbench.tui.document import Document

# Golden runs by status (tests/fixtures/traces/make_v1.py).
COMPLETED = "276a0272c8a551178d8bfedb26070002"
ERROR = "ef47ea9fac8e53a683b951af3c16bc2f"
MAX_TURNS = "9885cb1103bd5320996b905ed85bc767"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    golden_traces_in(folder / "traces")
    return folder


def golden_usage(run_id: str) -> dict[int, dict[str, Any]]:
    """A golden run's usage by turn, as its model responses recorded it."""
    usage = {}
    for line in (GOLDEN / f"{run_id}.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["type"] == "model_response":
            usage[event["turn"]] = event["usage"]
    return usage


@pytest.fixture
def demo_home(tmp_path: Path) -> Path:
    """A home with the runs `workbench demo` records (one of each status)."""
    home = tmp_path / "demo"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["--home", str(home), "demo", "--no-tui"]) == 0
    return home


async def settle(
    pilot: Pilot[Any], until: Callable[[], object] | None = None, tries: int = 200
) -> None:
    """Let workers finish and their messages land, until `until()` holds. A worker that
    fails is the app's to show (what it shows is what the tests look at), and one that a
    newer one replaced (`exclusive`) was cancelled."""
    for _ in range(tries):
        with contextlib.suppress(WorkerFailed, WorkerCancelled):
            await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if until is None or until():
            return
        await pilot.pause(0.02)  # a timer (replay play) or a page request may be next
    raise AssertionError("the app did not reach the expected state")


async def pair_result(pilot: Pilot[Any], screen_type: type, busy: str) -> str:
    """The text of a two-run screen's result (compare, schema diff) once the screen is open
    and its result no longer says `busy` ("aligning", "diffing")."""
    app = pilot.app
    await settle(pilot, lambda: isinstance(app.screen, screen_type))
    screen = app.screen
    await settle(pilot, lambda: busy not in plain(screen.query_one("#pair-result", Document)))
    return plain(screen.query_one("#pair-result", Document))


def plain(widget: Static | Document, width: int = 160) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(widget.content)
    return console.export_text()
