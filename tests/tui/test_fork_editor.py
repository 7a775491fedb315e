"""The fork editor's direct keys (issue 25, item 7) and its plan before the run (issue 26):
F2/F3 pick the prompt or the user message, F4 the next tool description, F5 the next
recorded result, ctrl+a selects all of a box; the footer says so. The demo's fork model
answers differently to an edit, so the comparison with the parent shows it."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

from textual.widgets import Footer, Select, Static, TextArea
from textual.widgets._footer import FooterKey

from tests.engine.engine_support import cli
from tests.tui.conftest import plain, settle
from traces.store import TraceStore
from workbench.cli import main
from workbench.tui import Endpoint, WorkbenchApp
from workbench.tui.diff_screens import ChainCompareScreen
from workbench.tui.document import Document
from workbench.tui.fork_screen import ForkScreen

SIZE = (160, 45)


def _demo_run(home: Path, status: str) -> str:
    with TraceStore.for_home(home) as store:
        return next(run.run_id for run in store.runs() if run.status == status)


async def _open_fork(pilot: Any, app: WorkbenchApp, parent: str, turn: int) -> ForkScreen:
    """The fork dialog for `parent` at `turn`, once its context has loaded."""
    app.open_fork(parent, turn)
    await settle(
        pilot, lambda: isinstance(app.screen, ForkScreen) and app.screen.context is not None
    )
    fork = app.screen
    assert isinstance(fork, ForkScreen) and fork.context is not None
    return fork


async def test_direct_keys_edit_a_tool_description_and_the_fork_answers_differently(
    demo_copy: Path,
) -> None:
    parent = _demo_run(demo_copy, "completed")
    app = WorkbenchApp(demo_copy, endpoint=Endpoint())  # no model: the demo's own fork model
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        fork = await _open_fork(pilot, app, parent, 1)
        assert fork.context is not None
        # The footer names the direct keys.
        await settle(pilot, lambda: len(fork.query(FooterKey)) > 0)
        shown_keys = {key.description for key in fork.query_one(Footer).query(FooterKey)}
        assert {"System", "User", "Tool", "Mock"} <= shown_keys

        # The plan shows before anything runs: what comes from the log, each tool's policy.
        plan = fork.query_one("#fork-plan", Static)
        await settle(pilot, lambda: "tools that may fire live" in plain(plan))
        assert "read_file" in plain(plan) and "read-only (default)" in plain(plan)

        tools = list(fork.context.tools)
        edit = fork.query_one("#fork-edit", Select)
        area = fork.query_one("#fork-text", TextArea)
        await pilot.press("f4")
        await settle(pilot, lambda: edit.value == f"tool:{tools[0]}" and app.focused is area)
        await pilot.press("f4")  # again: the next tool, one key each
        await settle(pilot, lambda: edit.value == f"tool:{tools[1]}")
        assert area.text == fork.context.tools[tools[1]]
        await settle(pilot, lambda: app.focused is area)
        await pilot.press("ctrl+a", *"Lists nothing.")  # select all, then type over it
        await settle(pilot, lambda: area.text == "Lists nothing.")
        assert fork.draft.edits == {f"tool:{tools[1]}": "Lists nothing."}

        await pilot.press("f2")
        await settle(pilot, lambda: edit.value == "system" and app.focused is area)
        assert area.text == fork.context.system

        await pilot.press("ctrl+r")
        await settle(pilot, lambda: isinstance(app.screen, ChainCompareScreen))
        compare = app.screen
        await settle(
            pilot, lambda: "aligning" not in plain(compare.query_one("#pair-result", Document))
        )
        shown = plain(compare.query_one("#pair-result", Document), width=300)
        assert "A tool's description was edited" in shown


async def test_the_plan_follows_a_mocked_result_as_it_is_typed(demo_copy: Path) -> None:
    parent = _demo_run(demo_copy, "completed")
    app = WorkbenchApp(demo_copy, endpoint=Endpoint())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        fork = await _open_fork(pilot, app, parent, 2)
        plan = fork.query_one("#fork-plan", Static)
        await settle(pilot, lambda: "no edits" in plain(plan))
        mock = fork.query_one("#fork-mock", TextArea)
        await pilot.press("f5")  # the first recorded result, in its box
        await settle(pilot, lambda: app.focused is mock)
        await pilot.press("ctrl+a", *"no such file")
        await settle(pilot, lambda: bool(fork.draft.mocks))
        [call_id] = fork.draft.mocks
        changes = plain(fork.query_one("#fork-changes", Static))
        assert call_id in changes
        # The plan is made again for the change: never "no edits" under a change.
        await settle(pilot, lambda: f"mock_result {call_id}" in plain(plan))
        assert "no edits" not in plain(plan)


async def test_a_bundle_opens_in_the_tui_on_its_runs(demo_copy: Path, tmp_path: Path) -> None:
    from workbench.engine.recording.runs.bundle_import import opened_bundle

    run = _demo_run(demo_copy, "completed")
    bundle = tmp_path / "one.wbundle"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["--home", str(demo_copy), "bundle", run, "-o", str(bundle)]) == 0
    # What `workbench FILE` opens: a throwaway home holding the bundle's runs.
    with opened_bundle(bundle) as (home, report):
        assert report.runs == [run]
        app = WorkbenchApp(home, endpoint=Endpoint())
        async with app.run_test(size=SIZE) as pilot:
            runs = app.screen.query_one("#runs-list")
            await settle(pilot, lambda: getattr(runs, "total", 0) == 1)
    assert not home.exists()


async def test_the_trace_tree_marks_each_fork_call_with_its_policy(demo_copy: Path) -> None:
    from traces.home import traces_dir
    from workbench.tui.run_screen import RunScreen

    with TraceStore.for_home(demo_copy) as store:
        recorded = store.runs()
    recovered = next(r.run_id for r in recorded if r.status == "completed" and r.turns > 2)
    before = set(traces_dir(demo_copy).glob("*.jsonl"))
    code = await cli("--home", str(demo_copy), "fork", recovered, "--turn", "2", "--quiet")
    assert code == 0
    [fork] = [p.stem for p in set(traces_dir(demo_copy).glob("*.jsonl")) - before]
    app = WorkbenchApp(demo_copy, endpoint=Endpoint())
    async with app.run_test(size=SIZE) as pilot:
        runs = app.screen.query_one("#runs-list")
        # the fork is ingested (the list folds the regression samples away)
        listed = sum(1 for r in recorded if r.origin != "regression_sample") + 1
        await settle(pilot, lambda: getattr(runs, "total", 0) == listed)
        app.open_run(fork)
        await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        turn = screen.chain_tree.turn_node(2)
        assert turn is not None
        turn.expand()
        await settle(pilot, lambda: any(n.data and n.data.kind == "tool" for n in turn.children))
        tools = [str(n.label) for n in turn.children if n.data and n.data.kind == "tool"]
        # The parent made this very call: the fork served it from the recording.
        assert tools and "[policy live → recorded]" in tools[0]
