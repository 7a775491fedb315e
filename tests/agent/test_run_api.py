"""`workbench run --api responses|anthropic`: the agent itself speaks the Responses API or
Anthropic Messages to a real local server, streamed and not, and its trace records each
call's format and exact body beside the chat-shape messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.engine.capture_support import assert_no_key_in
from tests.engine.test_serve_model import serve
from traces.events import ModelRequest, RunEnd
from traces.reader import read_trace
from workbench.cli import main
from workbench.engine.http.model_server import ModelServer, ScriptResponder

SECRET = "sk-ant-test-0123456789abcdefSECRET"
STEPS: list[dict[str, Any]] = [
    {
        "content": "Reading.",
        "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}],
    },
    {"content": "It is a tiny demo project."},
]


@pytest.fixture(autouse=True)
def no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "WORKBENCH_MODEL", "WORKBENCH_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("api", ["responses", "anthropic"])
def test_the_agent_speaks_another_wire_format(
    tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str], api: str, stream: bool
) -> None:
    home = tmp_path / "home"
    with ModelServer(ScriptResponder(STEPS)) as server:
        base_url = server.base_url if api == "responses" else server.base_url.removesuffix("/v1")
        args = [
            "run", "What is in README.md?", "--api", api, "--base-url", base_url,
            "--model", "scripted", "--api-key", SECRET, "--root", str(project),
            "--home", str(home),
        ]  # fmt: skip
        code = main(args if stream else [*args, "--no-stream"])
        sent = server.requests
    assert code == 0, capsys.readouterr().err
    assert "It is a tiny demo project." in capsys.readouterr().out
    path = "/v1/responses" if api == "responses" else "/v1/messages"
    assert [r.path for r in sent] == [path, path]
    assert [r.body["stream"] for r in sent] == [stream, stream]
    if api == "anthropic":
        assert all(
            r.headers["x-api-key"] == SECRET and "authorization" not in r.headers for r in sent
        )
        assert all(r.headers["anthropic-version"] for r in sent)
        [result] = sent[1].body["messages"][-1]["content"]
        assert result["type"] == "tool_result" and result["content"].startswith("1: # demo")
    else:
        assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in sent)
        result = sent[1].body["input"][-1]
        assert result["type"] == "function_call_output" and result["output"].startswith("1: # demo")
    [trace] = sorted((home / "traces").glob("*.jsonl"))
    assert SECRET not in trace.read_text()
    events = read_trace(trace).events
    requests = [e for e in events if isinstance(e, ModelRequest)]
    assert [r.api for r in requests] == [api, api]
    assert [r.body for r in requests] == [json.loads(json.dumps(r.body)) for r in sent]
    assert requests[1].messages[-1]["role"] == "tool"
    end = events[-1]
    assert isinstance(end, RunEnd) and end.status == "completed"
    assert end.final_answer == "It is a tiny demo project."
    # Replayed offline in its own format: the same decision chain.
    capsys.readouterr()
    assert main(["replay", trace.stem, "--home", str(home)]) == 0
    assert "identical decision chain" in capsys.readouterr().out
    assert_no_key_in(home, SECRET)
    # And the same task, offline, against `serve-model --replay` in the run's own format.
    with serve("--replay", trace.stem, "--home", str(home)) as replay_url:
        replay_base = replay_url if api == "responses" else replay_url.removesuffix("/v1")
        again = [*args[:5], replay_base, *args[6:-2], "--home", str(tmp_path / "again")]
        code = main(again if stream else [*again, "--no-stream"])
    printed = capsys.readouterr()
    assert code == 0, printed.out + printed.err
    assert "It is a tiny demo project." in printed.out
    [replayed] = (tmp_path / "again" / "traces").glob("*.jsonl")
    assert read_trace(replayed).events[-1].final_answer == end.final_answer  # type: ignore[union-attr]


@pytest.mark.parametrize("front", ["cli", "mcp", "tui"])
def test_a_fork_of_an_anthropic_run_reads_the_anthropic_settings(
    tmp_path: Path,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    front: str,
) -> None:
    """A fork speaks its parent's wire format, so with no --api it reads that format's
    settings: ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY, not the OpenAI ones."""
    import asyncio

    from workbench.engine.mcp_server.forking import run_fork, setup
    from workbench.engine.recording.fork.plan import ForkRequest
    from workbench.engine.recording.runs.load import load_recording

    home = tmp_path / "home"
    with ModelServer(ScriptResponder(STEPS)) as parent_server:
        args = [
            "run", "What is in README.md?", "--api", "anthropic", "--model", "scripted",
            "--base-url", parent_server.base_url.removesuffix("/v1"), "--api-key", SECRET,
            "--root", str(project), "--home", str(home),
        ]  # fmt: skip
        assert main(args) == 0, capsys.readouterr().err
    [trace] = (home / "traces").glob("*.jsonl")
    fork_key = "sk-ant-fork-0123456789abcdefFORKKEY"
    with ModelServer(ScriptResponder([{"content": "Forked."}])) as fork_server:
        # Only the Anthropic variables lead to the fork's model; the OpenAI ones lead nowhere.
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fork_server.base_url.removesuffix("/v1"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", fork_key)
        monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-not-this-one")
        monkeypatch.setenv("WORKBENCH_MODEL", "scripted")
        if front == "cli":
            code = main(["fork", trace.stem, "--turn", "2", "--home", str(home)])
            printed = capsys.readouterr()
            assert code == 0, printed.err
            assert "Forked." in printed.out
        elif front == "mcp":
            fork = setup(load_recording(trace.stem, home), ForkRequest(turn=2), home)
            result = asyncio.run(run_fork(fork, home))
            assert (result["status"], result["answer"]) == ("completed", "Forked.")
        else:
            shown, fork_run_id = asyncio.run(_fork_in_the_dialog(home, trace.stem))
            # The dialog shows the settings the fork uses, not the OpenAI ones.
            assert shown == (fork_server.base_url.removesuffix("/v1"), "scripted", fork_key)
            assert fork_run_id is not None
        sent = fork_server.requests
    assert [r.path for r in sent] == ["/v1/messages"]
    assert sent[0].headers["x-api-key"] == fork_key
    assert_no_key_in(home, fork_key)


async def _fork_in_the_dialog(home: Path, run_id: str) -> tuple[tuple[str, str, str], str | None]:
    """Run a fork at turn 2 from the TUI's fork dialog, its model the environment's: what
    its model boxes show once the run is read (base URL, model, key), and the fork's id."""
    from textual.widgets import Input

    from tests.tui.conftest import settle
    from workbench.tui import Endpoint, WorkbenchApp
    from workbench.tui.fork_screen import ForkScreen
    from workbench.tui.runs_screen import RunsScreen

    app = WorkbenchApp(home, endpoint=Endpoint.from_env(), watch=False)
    async with app.run_test(size=(160, 45)) as pilot:
        # As a user opens it: on a run the list shows, once the new trace is picked up.
        runs = app.screen
        assert isinstance(runs, RunsScreen)
        await settle(pilot, lambda: runs.runs_list.total == 1)
        dialog = ForkScreen(run_id, 2)
        await app.push_screen(dialog)
        await settle(pilot, lambda: dialog.context is not None)
        boxes = ("#fork-base-url", "#fork-model", "#fork-api-key")
        base_url, model, key = (dialog.query_one(box, Input).value for box in boxes)
        await pilot.press("ctrl+r")
        await settle(pilot, lambda: dialog.fork_run_id is not None and not dialog.running)
        return (base_url, model, key), dialog.fork_run_id
