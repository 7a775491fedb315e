"""The fork dialog and export of a long run read it from the store a turn (export: a window
of turns) at a time: the dialog of its last turn opens with that turn's history and the
plan, from the store alone; export says it started and writes the whole run's document."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Static

from tests.support.generated_runs import varied_run
from tests.tui.conftest import plain, said, settle
from traces.reader import read_trace
from traces.store import TraceStore
from workbench.engine.views.export import EXPORT_TURNS, export_run
from workbench.tui import WorkbenchApp
from workbench.tui.fork_screen import ForkScreen
from workbench.tui.render import short_id
from workbench.tui.run_screen import RunScreen

SIZE = (160, 45)
LONG = "8" * 32


def _home(tmp_path: Path, turns: int) -> Path:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    varied_run(home / "traces", LONG, turns, reuse_ids=False, rounds_kept=3)
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
    return home


def _text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


async def test_the_fork_dialog_of_a_long_runs_last_turn_reads_the_store(tmp_path: Path) -> None:
    home = _home(tmp_path, 300)
    # Only the store holds the run now: the dialog cannot have read its trace file.
    (home / "traces" / f"{LONG}.jsonl").unlink()
    app = WorkbenchApp(home, ingest=False, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_fork(LONG, 300)
        await settle(pilot, lambda: isinstance(app.screen, ForkScreen) and app.screen.context)
        fork = app.screen
        assert isinstance(fork, ForkScreen) and fork.context is not None
        assert fork.context.turn == 300 and fork.context.system == "You look around."
        # The results its history holds (three rounds) are the ones to mock.
        assert [c.call_id for c in fork.context.calls] == ["call_297", "call_298", "call_299"]
        plan = fork.query_one("#fork-plan", Static)
        await settle(pilot, lambda: "tools that may fire live" in plain(plan))
        shown = plain(plan)
        assert "1 (1 model call; read_file), 2 (2 model calls; read_file)" in shown
        assert "… 293 turns more …" in shown and "299 (1 model call; read_file)" in shown
        assert "turn 300 is sent with 8 messages" in shown

        turn = fork.query_one("#fork-turn", Input)  # a turn the run does not have
        turn.value = "301"
        turn.focus()
        await pilot.press("enter")
        await settle(pilot, lambda: "no model call" in fork.output.text.plain)
        assert "pick one of its 300 model turns, 1 to 300" in fork.output.text.plain


async def test_exporting_a_long_run_says_so_and_writes_it_whole(tmp_path: Path) -> None:
    turns = EXPORT_TURNS + 20  # two windows of turns
    home = _home(tmp_path, turns)
    events = list(read_trace(home / "traces" / f"{LONG}.jsonl").events)
    app = WorkbenchApp(home, ingest=False, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_run(LONG)
        await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
        run = app.screen
        assert isinstance(run, RunScreen)
        await pilot.press("x")
        await settle(pilot, lambda: any(m.startswith("Exported") for m in said(app)))
        started, done = said(app)
        assert started == f"Exporting the run as Markdown ({turns} turns)…"
        assert _text(done.removeprefix("Exported the run as Markdown to ")) == export_run(
            events, "md"
        )
        assert run.sub_title == f"{short_id(LONG)} · completed"  # the progress is gone
