"""Annotations are shown wherever the run is (issue 39, part 1): the run screen marks the
run (summary line), each annotated turn and each annotated tool call in the tree with its
labels, scores and notes, and the detail pane lists the annotations on the selected step."""

from __future__ import annotations

import contextlib
import io
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


async def test_the_tree_marks_the_run_its_turns_and_its_tool_calls(home: Path) -> None:
    _note(home, COMPLETED, "--label", "golden")
    _note(home, f"{COMPLETED}:1", "--score", "helpful=0.25", "--text", "asked twice")
    _note(home, f"{COMPLETED}:1", "--score", "helpful=0.5")  # the latest value shows
    _note(home, f"{COMPLETED}:1:call_t1", "--label", "wrong-tool", "--label", "slow")
    with TraceStore.for_home(home) as store:  # (the app's own ingest may come after the run)
        store.ingest_home(home)
    app = WorkbenchApp(home)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot, lambda: app.screen.query("#runs-list"))
        app.open_run(COMPLETED)
        await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
        screen = app.screen
        assert isinstance(screen, RunScreen)
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
