"""The three front ends of the one fork runner — `workbench fork` (a subprocess), the TUI's
backend and `mcp-serve`'s fork_run (a subprocess driven by the official MCP client) — fork
the same run the same way: the same folder for new file-tool calls, the same root recorded,
the same notes, the same plan for each tool."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.engine.engine_support import read_call, recorded_read_run
from traces.home import traces_dir
from workbench.engine.http.model_server import ModelServer, ScriptResponder
from workbench.engine.recording.fork.plan import ForkRequest
from workbench.engine.recording.fork.runner import gone_note
from workbench.engine.recording.runs.load import Recording, read_recording_file
from workbench.tui.backend import Backend, Endpoint
from workbench.tui.fork_draft import plan_text

WORKBENCH = [sys.executable, "-c", "import sys; from workbench.cli import main; sys.exit(main())"]


# The fork, at turn 2, reads a file the parent never read: a new call, run live.
FORK_STEPS = [read_call("b.txt", "call_b"), {"content": "beta it is"}]


def _env(**extra: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "WORKBENCH_HOME"} | extra


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*WORKBENCH, *args], cwd=cwd, capture_output=True, text=True, env=_env(), timeout=300
    )


@asynccontextmanager
async def _served(home: Path, cwd: Path, **env: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=WORKBENCH[0],
        args=[*WORKBENCH[1:], "mcp-serve", "--home", str(home), "--allow-writes"],
        env=_env(**env),
        cwd=cwd,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def _fork_run(session: ClientSession, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool("fork_run", arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, text
    answer: dict[str, Any] = json.loads(text)
    return answer


def _fork_of(home: Path, before: set[Path]) -> Recording:
    [path] = set(traces_dir(home).glob("*.jsonl")) - before
    return read_recording_file(path)


def _read_live(fork: Recording) -> str:
    """The result of the fork's one tool call, which ran live (not served from the log)."""
    [end] = [e for e in fork.events if e.type == "tool_end"]
    assert end.ok and not end.replayed, end
    return end.result


async def test_the_three_front_ends_fork_a_run_whose_folder_is_gone_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project, run_id = await asyncio.to_thread(recorded_read_run, tmp_path)
    shutil.rmtree(project)
    here = tmp_path / "here"  # the folder each front end is started in
    here.mkdir()
    (here / "b.txt").write_text("beta\n")
    note = gone_note(str(project), here.resolve())
    roots: dict[str, str] = {}

    before = set(traces_dir(home).glob("*.jsonl"))
    with ModelServer(ScriptResponder(FORK_STEPS)) as server:
        model = ["--base-url", server.base_url, "--model", "scripted"]
        done = _cli("--home", str(home), "fork", run_id, "--turn", "2", *model, "--quiet", cwd=here)
    assert done.returncode == 0, done.stderr
    assert f"note: {note}\n" in done.stderr
    fork = _fork_of(home, before)
    assert _read_live(fork).startswith("1: beta")
    roots["cli"] = fork.run_start.meta["root"]

    monkeypatch.chdir(here)
    backend = Backend(home)
    backend.ingest()
    endpoint = Endpoint(base_url="http://127.0.0.1:9/v1", model="scripted")
    plan = backend.fork_plan(run_id, ForkRequest(turn=2), endpoint)
    assert (
        plan.notes == [note] and f"note: {note}" in plan_text(plan).plain
    )  # as the dialog shows it
    before = set(traces_dir(home).glob("*.jsonl"))
    with ModelServer(ScriptResponder(FORK_STEPS)) as server:
        endpoint = Endpoint(base_url=server.base_url, model="scripted")
        outcome = await asyncio.to_thread(
            backend.run_fork, run_id, ForkRequest(turn=2), endpoint, lambda item: None
        )
    backend.release()
    assert outcome.result.status == "completed" and outcome.notes == [note]
    fork = _fork_of(home, before)
    assert _read_live(fork).startswith("1: beta")
    roots["tui"] = fork.run_start.meta["root"]

    before = set(traces_dir(home).glob("*.jsonl"))
    with ModelServer(ScriptResponder(FORK_STEPS)) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "WORKBENCH_MODEL": "scripted"}
        async with _served(home, here, **env) as session:
            planned = await _fork_run(session, run=run_id, turn=2, dry_run=True)
            answer = await _fork_run(session, run=run_id, turn=2)
    assert planned["notes"] == [note] and answer["notes"] == [note]
    assert answer["status"] == "completed" and answer["answer"] == "beta it is"
    fork = _fork_of(home, before)
    assert _read_live(fork).startswith("1: beta")
    roots["mcp-serve"] = fork.run_start.meta["root"]

    assert roots == dict.fromkeys(("cli", "tui", "mcp-serve"), str(here.resolve()))


async def test_the_cli_and_mcp_serve_plan_a_fork_alike(tmp_path: Path) -> None:
    """The plan of a fork (`fork --dry-run --json`, fork_run's dry_run): the read-only
    built-ins fire live on the parent's folder in both, with the same notes."""
    home, project, run_id = await asyncio.to_thread(recorded_read_run, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    request = ["fork", run_id, "--turn", "2", "--system", "Be brief.", "--dry-run", "--json"]
    done = _cli("--home", str(home), *request, cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    cli_plan = json.loads(done.stdout)
    async with _served(home, elsewhere) as session:
        mcp_plan = await _fork_run(session, run=run_id, turn=2, system="Be brief.", dry_run=True)

    assert mcp_plan["tool_policy"] == cli_plan["tools"]
    assert mcp_plan["notes"] == cli_plan["notes"] == []
    assert mcp_plan["model"] == cli_plan["model"]
    effects = {tool["name"]: tool["effect"] for tool in cli_plan["tools"]}
    assert effects["read_file"] == "new calls fire live"
    assert {name for name, effect in effects.items() if effect == "new calls fire live"} == {
        "read_file",
        "list_dir",
        "search_files",
        "calculator",
    }
    assert project.is_dir()
