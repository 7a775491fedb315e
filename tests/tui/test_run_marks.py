"""Annotations are shown wherever the run is (issue 39, part 1): the run screen marks the
run (summary line), each annotated turn and each annotated tool call in the tree with its
labels, scores and notes, and the detail pane lists the annotations on the selected step."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from pathlib import Path

from textual.widgets import Static

from tests.tui.conftest import COMPLETED, plain, settle
from traces.store import TraceStore
from workbench.cli import main
from workbench.tui import WorkbenchApp
from workbench.tui.run_screen import RunScreen


def _note(home: Path, target: str, *flags: str) -> None:
    argv = ["--home", str(home), "note", target, "--author", "ann", *flags]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0


def _ingested_app(home: Path) -> WorkbenchApp:
    """The app on `home`, its annotations stored first (the app's own ingest may come after
    the run is opened)."""
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
    return WorkbenchApp(home)


async def _open_completed(pilot, app: WorkbenchApp) -> RunScreen:
    await settle(pilot, lambda: app.screen.query("#runs-list"))
    app.open_run(COMPLETED)
    await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
    assert isinstance(app.screen, RunScreen)
    return app.screen


async def test_the_tree_marks_the_run_its_turns_and_its_tool_calls(home: Path) -> None:
    _note(home, COMPLETED, "--label", "golden")
    _note(home, f"{COMPLETED}:1", "--score", "helpful=0.25", "--text", "asked twice")
    _note(home, f"{COMPLETED}:1", "--score", "helpful=0.5")  # the latest value shows
    _note(home, f"{COMPLETED}:1:call_t1", "--label", "wrong-tool", "--label", "slow")
    app = _ingested_app(home)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await _open_completed(pilot, app)
        summary = plain(screen.query_one("#run-summary", Static))
        assert "✎ [golden]" in summary.splitlines()[0]
        tree = screen.chain_tree
        turns = {n.data.turn: str(n.label) for n in tree.root.children if n.data and n.data.turn}
        assert "✎ helpful=0.5 1 note" in turns[1]
        assert "✎" not in turns[2]
        turn = tree.turn_node(1)
        assert turn is not None
        turn.expand()
        await settle(pilot, lambda: 1 in tree.turns_loaded)
        assert "✎" in str(turn.label)  # still marked once its steps are in
        calls = {
            getattr(n.data.events[0], "call_id", None): n
            for n in turn.children
            if n.data is not None and n.data.kind == "tool"
        }
        assert "✎ [wrong-tool] [slow]" in str(calls["call_t1"].label)
        assert "✎" not in str(calls["call_r1"].label)
        # The detail of the marked call lists its annotation as `show` prints it.
        tree.move_cursor(calls["call_t1"])
        detail = screen.query_one("#detail-body", Static)
        await settle(pilot, lambda: "annotations (1)" in plain(detail))
        assert "ann: [wrong-tool] [slow]" in plain(detail)


TURN_RUBRIC = """
[rubric]
name = "helpful"
version = 1
target = "turn"
instructions = "Score how much the turn moves the task forward."

[scores]
helpful = "1: the step the task needs; 0: no use"
"""


async def test_a_judges_scores_are_marks_like_anyones(home: Path) -> None:
    """`workbench judge`'s scores are annotations by judge:<rubric>: each judged turn is
    marked with its score, and its detail names the judge."""
    (home / "helpful.toml").write_text(TURN_RUBRIC, encoding="utf-8")
    verdict = '{"helpful": 0.75, "reason": "reads the right file"}'
    script = {"name": "judge-m", "steps": [{"content": verdict}]}
    (home / "judge.json").write_text(json.dumps(script), encoding="utf-8")
    argv = ["--home", str(home), "judge", str(home / "helpful.toml"), COMPLETED]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        # `workbench judge` runs its own event loop: in a thread, beside the test's.
        judged = await asyncio.to_thread(main, [*argv, "--script", str(home / "judge.json")])
    assert judged == 0
    app = _ingested_app(home)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await _open_completed(pilot, app)
        tree = screen.chain_tree

        def turns() -> dict[int, str]:
            return {n.data.turn: str(n.label) for n in tree.root.children if n.data and n.data.turn}

        marked = "✎ helpful=0.75 1 note"  # both turns judged
        assert all(marked in label for label in turns().values())
        assert sorted(turns()) == [1, 2]
        node = tree.turn_node(1)
        assert node is not None
        tree.move_cursor(node)
        detail = screen.query_one("#detail-body", Static)
        await settle(pilot, lambda: "annotations (1)" in plain(detail))
        assert 'judge:helpful: helpful=0.75 "reads the right file"' in plain(detail)
