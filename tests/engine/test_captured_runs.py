"""Captured runs work with the rest of the workbench: show, diff, fork and regression cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.engine.capture_support import STEPS, TASK, run_agent, runs
from tests.engine.engine_support import cli, read_events
from tests.support.servers import recording_proxy
from workbench.engine.http.model_server import ScriptResponder


def capture(home: Path, times: int = 1) -> list[str]:
    for _ in range(times):
        with recording_proxy(ScriptResponder(STEPS), home) as (_, proxy):
            run_agent(proxy.base_url, stream=True)
    return [events[0]["run_id"] for events in runs(home)]


def script(path: Path, steps: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"steps": steps}))
    return str(path)


async def test_show_and_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    first, second = capture(home, times=2)
    assert await cli("show", first, "--home", str(home)) == 0
    shown = capsys.readouterr().out
    assert "origin: captured by OpenAI/Python" in shown
    assert "tool calculator [ok" in shown and "client, observed]" in shown
    assert await cli("export", first, "--home", str(home)) == 0
    assert "**Tool `calculator`**" in (exported := capsys.readouterr().out)
    assert ", ok, observed)" in exported  # the client ran it; the export says so
    assert await cli("diff", first, second, "--home", str(home)) == 0
    assert "the decision chains are the same" in capsys.readouterr().out
    # `replay` re-drives the workbench's own agent, which made none of these decisions.
    assert await cli("replay", first, "--home", str(home)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"serve-model --replay {first[:12]}" in err


async def test_a_fork_answers_recorded_calls_and_stops_at_a_call_only_the_client_could_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    (parent,) = capture(home)
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("the workbench's own read_file must not read this")
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"id": "f1", "name": "read_file", "arguments": {"path": "config.toml"}}]},
        {"tool_calls": [{"id": "f2", "name": "read_file", "arguments": {"path": "README.md"}}]},
        {"content": "never asked"},
    ]
    code = await cli(
        "fork", parent, "--turn", "1", "--system", "Be brief.", "--root", str(root),
        "--script", script(tmp_path / "s.json", steps), "--home", str(home), "--quiet",
    )  # fmt: skip
    assert code == 3
    fork = next(e for e in runs(home) if e[0]["parent_run_id"] == parent)
    ends = [e for e in fork if e["type"] == "tool_end"]
    assert [(e["ok"], e["error"]) for e in ends] == [(True, None), (False, "not_recorded")]
    assert ends[0]["result"] == 'name = "demo"\nport = 8080\n'
    assert "must not read this" not in json.dumps(fork)
    end = fork[-1]
    assert end["status"] == "error"
    assert end["reason"].startswith('fork stopped at read_file({"path": "README.md"})')
    assert "the recording has no result" in end["reason"] and "--mock" not in end["reason"]
    assert "mock the call's result (call id f2) or fork at another turn" in end["reason"]
    assert "--mock CALL_ID=TEXT" in capsys.readouterr().err  # the CLI names its flag


async def test_a_regression_case_from_a_captured_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (run,) = capture(home)
    suite = tmp_path / "cap.wbsuite.toml"
    code = await cli(
        "capture-case", run, "--turn", "1", "--suite", str(suite), "--with-args",
        "--home", str(home),
    )  # fmt: skip
    assert code == 0
    model = script(tmp_path / "m.json", [STEPS[0]] * 3)
    assert await cli("test", str(suite), "--script", model, "--home", str(home)) == 0
    sample = next(e for e in runs(home) if e[0]["meta"].get("regress"))
    request = next(e for e in sample if e["type"] == "model_request")
    assert request["messages"][1]["content"] == TASK
    assert read_events(home / "traces" / f"{run}.jsonl")[0]["origin"] == "captured"
