"""Session records the golden files do not hold, in the shapes the CLIs write them: Codex's
freeform `apply_patch` call (`custom_tool_call`) and a reasoning item; a Claude Code tool
result that is an error; a sidechain kept inline (`isSidechain`, older transcripts); a
session that stops before the model's last answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.engine.capture_support import runs
from workbench.cli import main

T = "2026-12-02T00:20:{:02d}.000Z"


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def imported(tmp_path: Path, kind: str, path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    home = tmp_path / "home"
    assert main(["import", kind, str(path), "--home", str(home)]) == 0
    assert capsys.readouterr().err == ""
    return {events[0]["run_id"]: events for events in runs(home)}


def item(second: int, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": T.format(second), "type": "response_item", "payload": payload}


def test_a_codex_apply_patch_call_and_its_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    patch = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"
    records = [
        {
            "timestamp": T.format(0),
            "type": "session_meta",
            "payload": {"id": "01a23420-031a-77b3-942d-5224abd7d5ff", "cli_version": "0.171.0"},
        },
        item(1, {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Add hello.txt"}]}),
        item(2, {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA…"}),
        item(2, {"type": "custom_tool_call", "call_id": "call_p", "name": "apply_patch",
                 "input": patch}),
        item(3, {"type": "custom_tool_call_output", "call_id": "call_p",
                 "output": "Success. Updated the following files:\nA hello.txt\n"}),
        item(4, {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Added hello.txt."}]}),
    ]  # fmt: skip
    rollout = write(tmp_path / "s" / "rollout-2026-12-02T00-20-00-x.jsonl", records)
    [run] = imported(tmp_path, "codex", rollout, capsys).values()
    [start] = [e for e in run if e["type"] == "tool_start"]
    [end] = [e for e in run if e["type"] == "tool_end"]
    assert (start["turn"], start["name"], start["arguments"]) == (
        1,
        "apply_patch",
        {"input": patch},
    )
    assert (end["ok"], end["observed"]) == (True, True) and "A hello.txt" in end["result"]
    assert (run[-1]["status"], run[-1]["final_answer"]) == ("completed", "Added hello.txt.")
    assert run[-1]["totals"]["turns"] == 2


def claude(second: int, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message |= {"id": extra.pop("message_id"), "model": "claude-sonnet-4-5"}
        message |= {"stop_reason": extra.pop("stop_reason", "tool_use")}
    return {
        "type": kind,
        "timestamp": T.format(second),
        "sessionId": "76c08d68-96af-4717-a33e-2fe161b0d6a6",
        "version": "2.1.332",
        "isSidechain": False,
        "message": message,
        **extra,
    }


def test_claude_code_errors_inline_sidechains_and_a_session_cut_short(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bash = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "false"}}
    failed = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Exit code 1",
              "is_error": True}  # fmt: skip
    records = [
        claude(0, "user", "Run false"),
        claude(1, "assistant", [{"type": "text", "text": "Running it."}], message_id="m1"),
        claude(1, "assistant", [bash], message_id="m1"),
        # A sub-agent's records kept in the session file, as older versions did.
        claude(2, "user", "Look around", isSidechain=True, agentId="a1"),
        claude(3, "assistant", [{"type": "text", "text": "Nothing here."}], message_id="m2",
               stop_reason="end_turn", isSidechain=True, agentId="a1"),
        claude(4, "user", [failed]),
        claude(5, "assistant", [{**bash, "id": "toolu_2"}], message_id="m3"),
    ]  # fmt: skip
    path = write(tmp_path / "p" / "76c08d68-96af-4717-a33e-2fe161b0d6a6.jsonl", records)
    found = imported(tmp_path, "claude-code", path, capsys)
    session = found.pop("76c08d6896af4717a33e2fe161b0d6a6")
    [side] = found.values()
    ends = [e for e in session if e["type"] == "tool_end"]
    assert [(e["call_id"], e["ok"], e["error"]) for e in ends] == [
        ("toolu_1", False, "Exit code 1")
    ]
    # The model asked for another call and the session stopped: the run is incomplete.
    assert session[-1]["type"] == "tool_start" and session[-1]["call_id"] == "toolu_2"
    assert main(["runs", "--json", "--home", str(tmp_path / "home")]) == 0
    listed = {r["run_id"]: r["status"] for r in json.loads(capsys.readouterr().out)}
    assert listed[session[0]["run_id"]] == "incomplete"
    assert side[0]["parent_run_id"] == session[0]["run_id"] and side[0]["task"] == "Look around"
    assert (side[-1]["status"], side[-1]["final_answer"]) == ("completed", "Nothing here.")
