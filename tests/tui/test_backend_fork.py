"""A fork started from the TUI runs new read-only tool calls live, on the folder the parent
run's tools could read (recorded in its run_start)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from tests.engine.engine_support import read_call, recorded_read_run
from tests.tui.conftest import plain, settle
from traces.events import ToolEnd
from workbench.engine.http.model_server import ModelServer, ScriptResponder
from workbench.engine.recording.fork.plan import ForkRequest
from workbench.tui import WorkbenchApp
from workbench.tui.backend import Backend, Endpoint, Outline, RunFilter
from workbench.tui.run_screen import RunScreen


def test_a_tui_fork_reads_new_files_from_the_recorded_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project, _ = recorded_read_run(tmp_path)
    (project / "b.txt").write_text("beta\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the current folder has no b.txt: only the recorded root does

    backend = Backend(home)
    backend.ingest()
    [parent] = backend.runs(RunFilter(), 0, 10)
    items: list[object] = []
    fork_answers: list[dict[str, Any]] = [read_call("b.txt", "call_b"), {"content": "beta it is"}]
    with ModelServer(ScriptResponder(fork_answers)) as server:
        result = backend.run_fork(
            parent.run_id,
            ForkRequest(turn=1),
            Endpoint(base_url=server.base_url, model="scripted"),
            items.append,
        ).result
    backend.release()

    assert result is not None
    assert result.status == "completed" and result.final_answer == "beta it is"
    [end] = [item for item in items if isinstance(item, ToolEnd)]
    assert end.ok and end.result.startswith("1: beta") and not end.replayed


def _fork_at_turn_two(tmp_path: Path) -> tuple[Path, str, Outline]:
    """A two-turn run (read a file, answer) and a fork of it at turn 2 that answers at once."""
    home, _, _ = recorded_read_run(tmp_path)
    backend = Backend(home)
    backend.ingest()
    [parent] = backend.runs(RunFilter(), 0, 10)
    with ModelServer(ScriptResponder([{"content": "alpha, again"}])) as server:
        result = backend.run_fork(
            parent.run_id,
            ForkRequest(turn=2),
            Endpoint(base_url=server.base_url, model="scripted"),
            lambda item: None,
        ).result
    assert result.status == "completed"
    backend.ingest()
    outline = backend.outline(result.run_id)
    backend.release()
    return home, result.run_id, outline


async def test_a_fork_at_turn_two_shows_its_one_turn_only(tmp_path: Path) -> None:
    home, fork_id, outline = await asyncio.to_thread(_fork_at_turn_two, tmp_path)
    app = WorkbenchApp(home, ingest=False, watch=False)
    async with app.run_test(size=(160, 45)) as pilot:
        app.open_run(fork_id)
        await settle(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.outline)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        nodes = [n.data for n in screen.chain_tree.root.children if n.data is not None]
        assert [n.turn for n in nodes if n.kind == "turn"] == [2]
        assert " 1 turn " in plain(screen.query_one("#run-summary", Static))
    assert (outline.first_turn, outline.turns) == (2, 1)
