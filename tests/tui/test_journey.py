"""The daily debugging journey of issue 14, through the real App with Pilot on a real store."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Static

from tests.tui.conftest import GOLDEN, MAX_TURNS, plain, settle
from workbench.tui import WorkbenchApp
from workbench.tui.paged_list import PagedList
from workbench.tui.replay_screen import ReplayScreen
from workbench.tui.run_screen import RunScreen

SIZE = (160, 45)
TIMEOUT = "875829d45a0a53888d30260f316d29d9"


def _runs(app: WorkbenchApp) -> PagedList:
    return app.screen.query_one("#runs-list", PagedList)


async def _open(pilot, app: WorkbenchApp, run_id: str) -> RunScreen:
    await settle(pilot, lambda: _runs(app).total >= 8)
    app.open_run(run_id)
    await settle(
        pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline is not None
    )
    assert isinstance(app.screen, RunScreen)
    return app.screen


def _labels(screen: RunScreen) -> list[str]:
    return [str(node.label) for node in screen.chain_tree.root.children]


async def test_turn_labels_say_what_happened(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, app, TIMEOUT)
        summary = plain(screen.query_one("#run-summary", Static))
        assert "2 turns" in summary and "1 tool call " in summary and "1 tool calls" not in summary

        await pilot.press("down", "down")  # turn 2: the model call that timed out
        assert "press enter to open" in plain(screen.query_one("#detail-body", Static))
        await pilot.press("enter")
        await settle(pilot, lambda: 2 in screen._loaded)
        turn_two = _labels(screen)[2]
        assert "turn 2" in turn_two and "answer" not in turn_two.replace("no answer", "")
        assert "no answer: timeout" in turn_two
        detail = plain(screen.query_one("#detail-body", Static))
        assert "press enter" not in detail and "turn 2" in detail and "timeout" in detail

        await pilot.press("up", "enter")  # turn 1 made one tool call
        await settle(pilot, lambda: 1 in screen._loaded)
        assert "1 tool call" in _labels(screen)[1] and "1 tool calls" not in _labels(screen)[1]


async def test_verify_opens_the_replay_at_the_divergence(home: Path) -> None:
    # The recording says list_dir returned something else than the model's next turn saw:
    # the replay diverges at turn 2's request, which carries the edited result.
    trace = home / "traces" / f"{MAX_TURNS}.jsonl"
    events = [json.loads(line) for line in (GOLDEN / trace.name).read_text().splitlines()]
    for event in events:
        if event["type"] == "tool_end" and event["call_id"] == "call_l1":
            event["result"] = "only_one_file.py"
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))

    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot, app, MAX_TURNS)
        await pilot.press("v")
        await settle(
            pilot,
            lambda: (
                isinstance(app.screen, ReplayScreen)
                and "re-running" not in plain(app.screen.query_one("#replay-verify", Static))
                and app.screen.timeline.total > 0
            ),
        )
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        verdict = plain(replay.query_one("#replay-verify", Static))
        assert "diverged" in verdict
        seq = int(verdict.split(" at seq ")[1].split(",")[0])
        assert seq > 0 and replay.timeline.cursor == seq
        assert f"event {seq + 1} /" in plain(replay.query_one("#replay-position", Static))
