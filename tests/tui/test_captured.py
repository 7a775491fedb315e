"""A run captured by `workbench proxy` opens in the TUI with its observed tool calls."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from tests.engine.capture_support import STEPS, run_agent
from tests.support.servers import recording_proxy
from tests.tui.conftest import notices, plain, settle
from workbench.engine.http.model_server import ScriptResponder
from workbench.tui import WorkbenchApp
from workbench.tui.paged_list import PagedList
from workbench.tui.replay_screen import ReplayScreen
from workbench.tui.run_screen import RunScreen


@pytest.fixture
def captured_home(tmp_path: Path) -> Path:
    """A home holding one run, captured by the proxy from an agent that streams."""
    home = tmp_path / "home"
    with recording_proxy(ScriptResponder(STEPS), home) as (_, proxy):
        run_agent(proxy.base_url, stream=True)
    return home


async def test_a_captured_run_shows_its_observed_tool_calls(captured_home: Path) -> None:
    app = WorkbenchApp(captured_home)
    async with app.run_test(size=(160, 45)) as pilot:
        runs = app.screen.query_one("#runs-list", PagedList)
        await settle(pilot, lambda: runs.total == 1 and runs.row(0) is not None)
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        start = screen.chain_tree.root.children[0]
        screen.chain_tree.move_cursor(start)
        await settle(pilot, lambda: "captured by OpenAI/Python" in _detail(screen))

        turn = screen.chain_tree.turn_node(1)
        assert turn is not None
        turn.expand()
        await settle(pilot, lambda: len(turn.children) >= 3)
        tools = [n for n in turn.children if n.data is not None and n.data.kind == "tool"]
        assert [str(n.label).split("(")[0][2:] for n in tools] == ["read_file", "calculator"]
        assert all("observed" in str(n.label) for n in tools)
        screen.chain_tree.move_cursor(tools[1])
        await settle(pilot, lambda: "16160" in _detail(screen))
        assert "observed" in _detail(screen)


def _detail(screen: RunScreen) -> str:
    return plain(screen.query_one("#detail-body", Static))


async def test_verify_replay_of_a_captured_run_is_a_notice_not_a_verdict(
    captured_home: Path,
) -> None:
    app = WorkbenchApp(captured_home)
    async with app.run_test(size=(160, 45)) as pilot:
        runs = app.screen.query_one("#runs-list", PagedList)
        await settle(pilot, lambda: runs.total == 1 and runs.row(0) is not None)
        run_id = runs.row(0).run_id  # type: ignore[union-attr]
        app.open_replay(run_id)
        await settle(pilot, lambda: isinstance(app.screen, ReplayScreen))
        await pilot.press("v")
        verify = app.screen.query_one("#replay-verify", Static)
        await settle(pilot, lambda: "does not apply" in plain(verify))
        shown = plain(verify, width=400)
        assert f"serve-model --replay {run_id[:12]}" in shown
        assert "diverged" not in shown and "None" not in shown
        assert [n.severity for n in notices(app)] == ["warning"]
