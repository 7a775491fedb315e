"""The journeys of issue 6, driven through the real App with Pilot on a real DuckDB store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from textual.widgets import Select, Static, TextArea

from tests.engine.engine_support import Project, SearchTools, search_schema
from tests.tui.conftest import ERROR, MAX_TURNS, notices, pair_result, plain, run_shown, settle
from workbench.engine.http.model_server import ModelServer, ScriptResponder
from workbench.tui import Endpoint, WorkbenchApp
from workbench.tui.backend import Backend
from workbench.tui.diff_screens import ChainCompareScreen, SchemaDiffScreen
from workbench.tui.document import Document
from workbench.tui.fork_screen import ForkScreen
from workbench.tui.paged_list import PagedList
from workbench.tui.replay_screen import ReplayScreen
from workbench.tui.run_screen import RunScreen
from workbench.tui.runs_screen import RunsScreen

SIZE = (160, 45)


def _runs(app: WorkbenchApp) -> PagedList:
    return app.screen.query_one("#runs-list", PagedList)


async def _open_run(pilot, app: WorkbenchApp, text: str) -> RunScreen:
    await settle(pilot, lambda: _runs(app).total == 8)
    await pilot.press("slash", *text, "enter")
    await settle(pilot, lambda: _runs(app).total == 1 and _runs(app).row(0) is not None)
    await pilot.press("enter")
    return await run_shown(pilot)


async def test_runs_list_filters_and_failed_only(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: _runs(app).total == 8)
        assert [getattr(_runs(app).row(i), "status", None) for i in range(8)].count(
            "completed"
        ) == 1
        await pilot.press("f")
        await settle(pilot, lambda: _runs(app).total == 7)
        assert "7 runs" in plain(app.screen.query_one("#runs-count", Static))
        await pilot.press("f")
        await settle(pilot, lambda: _runs(app).total == 8)


async def test_open_the_failed_run_and_jump_to_its_first_error(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_run(pilot, app, "Compute")
        assert screen.run_id == ERROR
        await pilot.press("e")

        def on_error() -> bool:
            node = screen.chain_tree.cursor_node
            return node is not None and node.data is not None and node.data.kind == "tool"

        await settle(pilot, on_error)
        node = screen.chain_tree.cursor_node
        assert node is not None and node.data is not None
        assert node.data.failed and node.data.turn == 1
        detail = plain(screen.query_one("#detail-body", Static))
        assert "calculator" in detail and "parse error" in detail


async def test_step_through_the_replay_and_verify(home: Path) -> None:
    from workbench.engine.recording.replay.verify import replay_run
    from workbench.engine.recording.runs.load import load_recording

    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await _open_run(pilot, app, "largest")
        await pilot.press("r")
        await settle(
            pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.timeline.total
        )
        replay = app.screen
        assert isinstance(replay, ReplayScreen) and replay.timeline.total == 43
        await pilot.press("n", "n", "n", "p")
        await settle(pilot)
        assert replay.timeline.cursor == 2
        position = plain(replay.query_one("#replay-position", Static))
        assert "seq 2 of 0–42" in position and "turn 1" in position
        assert "model_chunk" in plain(replay.query_one("#replay-event", Static))

        await pilot.press("e")  # first failure: the failed list_dir in turn 4
        await settle(pilot, lambda: replay.timeline.cursor == 41)

        await pilot.press("t", "space")  # play the rest fast
        await settle(pilot, lambda: not replay.playing)
        assert replay.timeline.cursor == 42

        await pilot.press("v")
        await settle(
            pilot,
            lambda: (
                "verify replay: " in plain(replay.query_one("#replay-verify", Static))
                and "re-running" not in plain(replay.query_one("#replay-verify", Static))
            ),
        )
        expected = await replay_run(load_recording(MAX_TURNS, home))
        shown = plain(replay.query_one("#replay-verify", Static))
        assert f"verify replay: {expected.status}" in shown


async def test_schema_diff_of_two_marked_runs(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: _runs(app).total == 8 and _runs(app).row(1) is not None)
        await pilot.press("space", "down", "space", "d")
        shown = await pair_result(pilot, SchemaDiffScreen, "diffing")
        assert "could not" not in shown
        assert "read_file" in shown


async def test_schema_diff_shows_a_change_inside_a_nested_parameter(tmp_path: Path) -> None:
    project = Project(home=tmp_path / "nested", root=tmp_path)
    answer = [{"content": "Nothing to search."}]
    await project.record(answer, toolsets=[SearchTools(search_schema())])
    await project.record(answer, toolsets=[SearchTools(search_schema(limit__type="string"))])
    app = WorkbenchApp(project.home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: _runs(app).total == 2 and _runs(app).row(1) is not None)
        await pilot.press("space", "down", "space", "d")
        shown = await pair_result(pilot, SchemaDiffScreen, "diffing")
        assert "0 added, 0 removed, 1 changed" in shown, shown
        assert "~ search" in shown and "filters (type)" in shown


async def test_fork_a_turn_with_a_mocked_result_and_compare(home: Path) -> None:
    answer = "(2 + 3) * 4 = 20."
    with ModelServer(ScriptResponder([{"content": answer}])) as server:
        endpoint = Endpoint(base_url=server.base_url, model="scripted", api_key="sk-test-key")
        app = WorkbenchApp(home, endpoint=endpoint)
        async with app.run_test(size=SIZE) as pilot:
            run = await _open_run(pilot, app, "Compute")
            await pilot.press("e")
            await settle(
                pilot,
                lambda: (
                    (node := run.chain_tree.cursor_node) is not None
                    and node.data is not None
                    and node.data.kind == "tool"
                ),
            )
            await pilot.press("f")  # on a tool call: fork the next turn with its result mocked
            await settle(
                pilot, lambda: isinstance(app.screen, ForkScreen) and app.screen.context is not None
            )
            fork = app.screen
            assert isinstance(fork, ForkScreen)
            assert fork.turn == 2 and fork.mock_call == "call_e1"
            mock = fork.query_one("#fork-mock", TextArea)
            await settle(pilot, lambda: app.focused is mock)  # the box the user came to edit
            mock.text = "20"
            await pilot.press("ctrl+r")
            await settle(pilot, lambda: isinstance(app.screen, ChainCompareScreen))
            compare = app.screen
            assert isinstance(compare, ChainCompareScreen)
            await settle(
                pilot, lambda: "aligning" not in plain(compare.query_one("#pair-result", Document))
            )
            shown = plain(compare.query_one("#pair-result", Document))
            assert "First divergence" in shown and "answer" in shown
            assert compare.run_a == ERROR and compare.run_b == fork.fork_run_id

    sent = server.bodies[0]["messages"]
    assert {"role": "tool", "tool_call_id": "call_e1", "content": "20"}.items() <= next(
        m for m in sent if m.get("role") == "tool"
    ).items()
    trace = home / "traces" / f"{fork.fork_run_id}.jsonl"
    start = json.loads(trace.read_text().splitlines()[0])
    assert start["parent_run_id"] == ERROR and start["fork_turn"] == 2
    assert start["edits"][0]["kind"] == "mock_result"
    assert "sk-test-key" not in trace.read_text()


async def test_a_failing_engine_call_is_a_notification_not_a_crash(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: _runs(app).total == 8)
        app.open_compare(ERROR, "no-such-run")
        await settle(pilot, lambda: bool(notices(app)))
        assert isinstance(app.screen, ChainCompareScreen)
        assert any(n.severity == "error" for n in notices(app))
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, RunsScreen)


async def test_other_commands_can_use_the_store_while_the_app_is_open(home: Path) -> None:
    import subprocess
    import sys

    app = WorkbenchApp(home, backend=Backend(home, idle_release_s=0.05))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: _runs(app).total == 8)
        assert app.backend.released.wait(10)  # idle: the database is let go
        command: list[str | Path] = [
            Path(sys.executable).with_name("workbench"),
            "--home",
            home,
            "runs",
            "--json",
        ]
        listing = await asyncio.to_thread(
            lambda: subprocess.run(command, capture_output=True, text=True)
        )
        assert listing.returncode == 0, listing.stderr
        assert len(json.loads(listing.stdout)) == 8
        await pilot.press("f")  # and the app opens it again on the next call
        await settle(pilot, lambda: _runs(app).total == 7)


async def test_the_fork_dialog_opens_on_what_to_change(home: Path) -> None:
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: _runs(app).total == 8)
        app.open_fork(ERROR, 1)
        await settle(
            pilot, lambda: isinstance(app.screen, ForkScreen) and app.screen.context is not None
        )
        fork = app.screen
        assert isinstance(fork, ForkScreen)
        assert app.focused is fork.query_one("#fork-edit", Select)
        await pilot.press("enter", "down", "enter")  # open the choices, take the system prompt
        area = fork.query_one("#fork-text", TextArea)
        await settle(pilot, lambda: area.display)
        await pilot.press("tab")
        assert app.focused is area
