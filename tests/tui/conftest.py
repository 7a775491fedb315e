"""Shared pieces of the TUI tests: a home folder of golden traces, one of the demo's runs, and
Pilot helpers that wait for workers and their messages instead of sleeping."""

from __future__ import annotations

import contextlib
import json
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Static
from textual.worker import WorkerCancelled, WorkerFailed

from tests.support.golden import GOLDEN as GOLDEN  # the TUI tests import it from here
from tests.support.golden import golden_traces_in
from workbench.tui.document import Document
from workbench.tui.run_screen import RunScreen

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


async def settle(
    pilot: Pilot[Any], until: Callable[[], object] | None = None, deadline_s: float = 60.0
) -> None:
    """Let workers finish and their messages land, until `until()` holds. A worker that
    fails is the app's to show (what it shows is what the tests look at), and one that a
    newer one replaced (`exclusive`) was cancelled. The deadline is a generous time, not a
    count of tries: on a busy machine a count runs out before the app gets there."""
    deadline = time.monotonic() + deadline_s
    while True:
        with contextlib.suppress(WorkerFailed, WorkerCancelled):
            await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if until is None or until():
            return
        if time.monotonic() > deadline:
            raise AssertionError("the app did not reach the expected state")
        await pilot.pause(0.02)  # a timer (replay play) or a page request may be next


@dataclass(frozen=True)
class Notice:
    message: str
    severity: str


_NOTICES: weakref.WeakKeyDictionary[App[Any], list[Notice]] = weakref.WeakKeyDictionary()


@pytest.fixture(autouse=True)
def _record_notices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every notice an app shows: `app.notifications` drops one once its timeout has
    passed, which on a busy machine comes before the test has looked."""
    notify = App.notify

    def recording(self: App[Any], message: str, **options: Any) -> None:
        _NOTICES.setdefault(self, []).append(
            Notice(message, options.get("severity", "information"))
        )
        notify(self, message, **options)

    monkeypatch.setattr(App, "notify", recording)


def notices(app: App[Any]) -> list[Notice]:
    """Every notice `app` has shown, oldest first, expired or not."""
    return list(_NOTICES.get(app, []))


def said(app: App[Any]) -> list[str]:
    """The messages of every notice `app` has shown, oldest first."""
    return [notice.message for notice in notices(app)]


def has_said(app: App[Any], start: str) -> bool:
    """Whether `app` has shown a notice starting `start` (other notices, such as a skipped
    trace line's, may come before or after it)."""
    return any(message.startswith(start) for message in said(app))


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


async def run_shown(pilot: Pilot[Any]) -> RunScreen:
    """The run screen, once it shows with its outline read."""
    app = pilot.app
    await settle(
        pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline is not None
    )
    assert isinstance(app.screen, RunScreen)
    return app.screen


async def writes_refused(pilot: Pilot[Any], run_id: str, why: str) -> RunScreen:
    """Open run `run_id`, ask to export it and to fork it at turn 1: each refused in one
    notice saying `why`, the run screen still shown. The run screen."""
    app = pilot.app
    app.open_run(run_id)  # type: ignore[attr-defined]
    run = await run_shown(pilot)
    await pilot.press("x")
    await settle(pilot, lambda: has_said(app, f"cannot export the run: {why}"))

    await pilot.press("down")  # turn 1
    await settle(
        pilot,
        lambda: (
            (node := run.chain_tree.cursor_node) is not None
            and node.data is not None
            and node.data.turn is not None
        ),
    )
    await pilot.press("f")
    await settle(pilot, lambda: has_said(app, f"cannot fork: {why}"))
    assert app.screen is run
    return run
