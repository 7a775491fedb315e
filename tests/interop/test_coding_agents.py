"""The real Claude Code and Codex CLIs through `workbench proxy`, against a local scripted
upstream: each run is captured with its tool calls and their results, holds no key, replays
offline through `serve-model --replay` to the same answer, and the session file the CLI
wrote imports as a run (`workbench import claude-code|codex`).

Opt-in, marker `coding_agents`: the CLIs come from npm (`scripts/install-coding-agents.sh`),
which CI does not run; without them the tests are skipped with the reason. Nothing here
reaches the internet: the CLIs' vendor traffic is off and their base URL is on loopback.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.engine.capture_support import read_run
from tests.interop.coding_agents import (
    ANSWER,
    ANTHROPIC_KEY,
    CLAUDE_MODEL,
    CODEX_MODEL,
    INSTALL,
    NOTES,
    OPENAI_KEY,
    TASK,
    Workspace,
    cli,
    run_claude,
    run_codex,
)
from tests.support.processes import WORKBENCH
from workbench.engine.http.model_server import ModelServer, ScriptResponder
from workbench.engine.http.proxy import RecordingProxy
from workbench.engine.http.serve import replay_server

pytestmark = pytest.mark.coding_agents


def need(name: str) -> Path:
    path = cli(name)
    if path is None:
        pytest.skip(f"{name} is not installed: {INSTALL}")
    return path


def root(base_url: str) -> str:
    return base_url.removesuffix("/v1")


def workbench(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [WORKBENCH, *argv, "--home", str(home)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def tool_calls(events: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str]]:
    """(name, arguments, result) of each tool call, checking that each has one end."""
    ends = {e["call_id"]: e for e in events if e["type"] == "tool_end"}
    calls = []
    for start in (e for e in events if e["type"] == "tool_start"):
        end = ends[start["call_id"]]
        assert (end["ok"], end["observed"], end["name"]) == (True, True, start["name"])
        calls.append((start["name"], start["arguments"], end["result"]))
    assert len(calls) == len(ends)
    return calls


def check_capture(home: Path, api: str, key: str, turns: int) -> list[dict[str, Any]]:
    events = read_run(home)
    assert key not in json.dumps(events)
    start, end = events[0], events[-1]
    assert (start["origin"], start["task"]) == ("captured", TASK)
    assert (end["type"], end["status"], end["final_answer"]) == ("run_end", "completed", ANSWER)
    requests = [e for e in events if e["type"] == "model_request"]
    assert [(r["turn"], r["api"]) for r in requests] == [(n, api) for n in range(1, turns + 1)]
    return events


def test_claude_code_is_captured_replayed_and_its_session_imported(tmp_path: Path) -> None:
    claude = need("claude")
    workspace = Workspace(tmp_path / "work")
    home = tmp_path / "wb"
    notes = str(workspace.project / "notes.txt")
    steps: list[dict[str, Any]] = [
        {
            "content": "I'll read the notes.",
            "tool_calls": [{"id": "toolu_read", "name": "Read", "arguments": {"file_path": notes}}],
        },
        {
            "tool_calls": [
                {
                    "id": "toolu_bash",
                    "name": "Bash",
                    "arguments": {"command": "wc -c notes.txt", "description": "Count bytes"},
                }
            ]
        },
        {"content": ANSWER},
    ]
    with (
        ModelServer(ScriptResponder(steps, model=CLAUDE_MODEL), model=CLAUDE_MODEL) as upstream,
        RecordingProxy(upstream.base_url, home, anthropic_upstream=root(upstream.base_url)) as px,
    ):
        assert run_claude(claude, workspace, root(px.base_url), persist=True) == ANSWER
    sessions = workspace.sessions(tmp_path / "claude-sessions")

    events = check_capture(home, "anthropic", ANTHROPIC_KEY, turns=3)
    [(read, read_args, read_result), (bash, bash_args, bash_result)] = tool_calls(events)
    assert (read, read_args["file_path"], bash, bash_args["command"]) == (
        "Read", notes, "Bash", "wc -c notes.txt"
    )  # fmt: skip
    assert NOTES.strip() in read_result and f"{len(NOTES)} notes.txt" in bash_result
    offered = {t["function"]["name"] for t in events[0]["tools"] if "function" in t}
    assert {"Read", "Bash", "Edit", "Write"} <= offered

    # Offline: the recorded answers, and the CLI ends the same way.
    server = replay_server([events[0]["run_id"]], home)
    try:
        assert run_claude(claude, workspace, root(server.base_url), persist=False) == ANSWER
    finally:
        server.close()

    # The transcript Claude Code wrote imports as a run with the same calls and answer.
    imported_home = tmp_path / "imported"
    done = workbench(imported_home, "import", "claude-code", str(sessions / ".claude" / "projects"))
    assert done.returncode == 0, done.stderr
    imported = read_run(imported_home)
    assert imported[0]["origin"] == "imported" and imported[-1]["final_answer"] == ANSWER
    assert [c[:2] for c in tool_calls(imported)] == [(read, read_args), (bash, bash_args)]


def test_codex_is_captured_replayed_and_its_rollout_imported(tmp_path: Path) -> None:
    codex = need("codex")
    workspace = Workspace(tmp_path / "work")
    home = tmp_path / "wb"
    steps: list[dict[str, Any]] = [
        {
            "content": "I'll read the notes.",
            "tool_calls": [
                {"id": "call_cat", "name": "exec_command", "arguments": {"cmd": "cat notes.txt"}}
            ],
            "usage": {"prompt_tokens": 2400, "completion_tokens": 30, "total_tokens": 2430},
        },
        {"content": ANSWER},
    ]
    with (
        ModelServer(ScriptResponder(steps, model=CODEX_MODEL), model=CODEX_MODEL) as upstream,
        RecordingProxy(upstream.base_url, home) as proxy,
    ):
        assert run_codex(codex, workspace, proxy.base_url, persist=True) == ANSWER
        bodies = upstream.bodies
    sessions = workspace.sessions(tmp_path / "codex-sessions")

    events = check_capture(home, "responses", OPENAI_KEY, turns=2)
    [(name, arguments, result)] = tool_calls(events)
    assert (name, arguments) == ("exec_command", {"cmd": "cat notes.txt"})
    assert NOTES.strip() in result
    request = next(e for e in events if e["type"] == "model_request")
    assert request["body"]["store"] is False
    assert request["body"]["include"] == ["reasoning.encrypted_content"]
    # The freeform apply_patch tool is offered as sent (a custom tool with a grammar).
    [patch] = [t for t in events[0]["tools"] if t.get("name") == "apply_patch"]
    assert patch["type"] == "custom" and patch["format"]["type"] == "grammar"
    assert len(bodies) == 2

    server = replay_server([events[0]["run_id"]], home)
    try:
        assert run_codex(codex, workspace, server.base_url, persist=False) == ANSWER
    finally:
        server.close()

    imported_home = tmp_path / "imported"
    done = workbench(imported_home, "import", "codex", str(sessions / ".codex" / "sessions"))
    assert done.returncode == 0, done.stderr
    imported = read_run(imported_home)
    assert imported[0]["origin"] == "imported" and imported[-1]["final_answer"] == ANSWER
    assert [c[:2] for c in tool_calls(imported)] == [(name, arguments)]
    assert NOTES.strip() in tool_calls(imported)[0][2]
    usage = next(e["usage"] for e in imported if e["type"] == "model_response")
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (2400, 30)
