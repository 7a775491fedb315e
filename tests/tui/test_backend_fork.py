"""A fork started from the TUI runs new read-only tool calls live, on the folder the parent
run's tools could read (recorded in its run_start)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from traces.events import ToolEnd
from workbench.cli import main
from workbench.engine.fork import ForkRequest
from workbench.engine.model_server import ModelServer, ScriptResponder
from workbench.tui.backend import Backend, Endpoint, RunFilter


def _read(path: str, call_id: str) -> dict[str, object]:
    return {"tool_calls": [{"id": call_id, "name": "read_file", "arguments": {"path": path}}]}


def test_a_tui_fork_reads_new_files_from_the_recorded_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("alpha\n")
    (project / "b.txt").write_text("beta\n")
    home = tmp_path / "home"
    script = tmp_path / "script.json"
    script.write_text(json.dumps([_read("a.txt", "call_a"), {"content": "alpha it is"}]))
    run = ["run", "What is in a.txt?", "--script", str(script), "--root", str(project)]
    assert main([*run, "--home", str(home)]) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the current folder has no b.txt: only the recorded root does

    backend = Backend(home)
    backend.ingest()
    [parent] = backend.runs(RunFilter(), 0, 10)
    items: list[object] = []
    fork_answers: list[dict[str, Any]] = [_read("b.txt", "call_b"), {"content": "beta it is"}]
    with ModelServer(ScriptResponder(fork_answers)) as server:
        result = backend.run_fork(
            parent.run_id,
            ForkRequest(turn=1),
            Endpoint(base_url=server.base_url, model="scripted"),
            items.append,
        )
    backend.release()

    assert result is not None
    assert result.status == "completed" and result.final_answer == "beta it is"
    [end] = [item for item in items if isinstance(item, ToolEnd)]
    assert end.ok and end.result.startswith("1: beta") and not end.replayed
