"""Fork at turn N: rebuilt history, edits, live continuation, side-effect guard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_core.agent import TextDelta
from agent_core.model.scripted import ScriptedModel
from tests.engine.engine_support import THREE_TURNS, Project, cli, note_tools, read_events
from traces.events import ModelRequest, RunStart, ToolEnd
from traces.home import traces_dir
from workbench.engine.http.model_server import ModelServer, ScriptResponder
from workbench.engine.recording.fork.plan import (
    REFUSED,
    ForkError,
    ForkRequest,
    fork_agent,
    plan_fork,
)
from workbench.engine.recording.replay.verify import replay_run
from workbench.engine.recording.runs.load import read_recording_file

MOCK = "config.toml\nsecrets.env"
EMPTY_SCHEMA = {"type": "object", "properties": {}}


async def test_fork_with_mock_sends_only_later_turns(project: Project, capsys) -> None:
    parent_path, parent = await project.record(THREE_TURNS)
    recorded_turn_2 = next(
        e for e in read_events(parent_path) if e["type"] == "model_request" and e["turn"] == 2
    )
    later: list[dict[str, Any]] = [
        {"tool_calls": [{"id": "f1", "name": "read_file", "arguments": {"path": "secrets.env"}}]},
        {"content": "There is no secrets file after all."},
    ]
    with ModelServer(ScriptResponder(later)) as server:
        code = await cli(
            "--home", str(project.home), "fork", parent.run_id[:10], "--turn", "2",
            "--mock", f"call_list={MOCK}", "--root", str(project.root),
            "--base-url", server.base_url, "--model", "scripted", "--api-key", "sk-test",
        )  # fmt: skip
        bodies = server.bodies
    out = capsys.readouterr().out
    assert code == 0, out
    # Turn 1 was never sent again: the first request is turn 2's history, mock in place.
    assert len(bodies) == 2
    expected = [dict(m) for m in recorded_turn_2["messages"]]
    tool_message = next(m for m in expected if m.get("tool_call_id") == "call_list")
    assert tool_message["content"] != MOCK
    tool_message["content"] = MOCK
    assert bodies[0]["messages"] == expected

    forks = [p for p in traces_dir(project.home).glob("*.jsonl") if p != parent_path]
    assert len(forks) == 1
    assert "sk-test" not in forks[0].read_text()
    events = read_events(forks[0])
    start = events[0]
    assert start["parent_run_id"] == parent.run_id and start["fork_turn"] == 2
    assert start["edits"] == [{"kind": "mock_result", "target": "call_list", "value": MOCK}]
    assert min(e["turn"] for e in events if e["turn"] is not None) == 2
    assert events[-1]["type"] == "run_end" and events[-1]["status"] == "completed"
    # The new read ran live (read-only); the file does not exist, so it is an error result.
    end = next(e for e in events if e["type"] == "tool_end")
    assert end["name"] == "read_file" and not end["ok"] and not end["replayed"]

    # A fork is a recording like any other: it replays offline.
    outcome = await replay_run(read_recording_file(forks[0]))
    assert outcome.status == "identical", outcome.divergence


NOTE_RUN: list[dict[str, Any]] = [
    {"tool_calls": [{"id": "n1", "name": "save_note", "arguments": {"text": "first"}}]},
    {"content": "Noted."},
]
FORK_CALLS: list[dict[str, Any]] = [
    {
        "tool_calls": [
            {"id": "m1", "name": "save_note", "arguments": {"text": "first"}},
            {"id": "m2", "name": "save_note", "arguments": {"text": "second"}},
        ]
    },
    {"content": "Done."},
]


async def test_new_side_effect_calls_are_refused_and_repeats_reuse_the_recording(
    project: Project,
) -> None:
    path, _ = await project.record(NOTE_RUN, task="Take notes")
    notes = project.root / "notes.txt"
    assert notes.read_text() == "first\n"
    plan = plan_fork(read_recording_file(path), ForkRequest(turn=1, user="Take two notes"))
    agent = fork_agent(plan, ScriptedModel(FORK_CALLS), live_toolsets=[note_tools(project.root)])
    ends = [e async for e in agent.run_stream() if isinstance(e, ToolEnd)]
    reused, refused = ends
    assert reused.ok and reused.replayed and reused.result.startswith("saved note")
    assert not refused.ok and refused.error == REFUSED
    assert refused.result.endswith("unless side effects are allowed")  # no CLI flag: TUI too
    assert notes.read_text() == "first\n"  # nothing ran

    allowed = plan_fork(read_recording_file(path), ForkRequest(turn=1, allow_side_effects=True))
    agent = fork_agent(allowed, ScriptedModel(FORK_CALLS), live_toolsets=[note_tools(project.root)])
    result = await agent.run()
    assert result.status == "completed"
    assert notes.read_text() == "first\nsecond\n"  # only the new call ran


async def test_edits_of_prompt_user_and_tool_description_are_recorded(project: Project) -> None:
    path, _parent = await project.record(THREE_TURNS)
    plan = plan_fork(
        read_recording_file(path),
        ForkRequest(
            turn=1,
            system="Answer in French.",
            user="Quel est le port ?",
            tool_descriptions={"calculator": "Does sums."},
            tool_schemas={"list_dir": EMPTY_SCHEMA},
        ),
    )
    assert plan.messages[0] == {"role": "system", "content": "Answer in French."}
    assert plan.messages[-1] == {"role": "user", "content": "Quel est le port ?"}
    model = ScriptedModel([{"content": "8080."}])
    agent = fork_agent(plan, model, live_toolsets=project.toolsets())
    events = [e async for e in agent.run_stream() if not isinstance(e, TextDelta)]
    start = events[0]
    assert isinstance(start, RunStart)
    assert start.task == "Quel est le port ?" and start.system_prompt == "Answer in French."
    kinds = [edit.kind for edit in start.edits]
    assert kinds == ["system", "user", "tool_description", "tool_schema"]
    offered = {t["function"]["name"]: t["function"] for t in start.tools}
    assert offered["calculator"]["description"] == "Does sums."
    assert offered["list_dir"]["parameters"] == EMPTY_SCHEMA
    request = next(e for e in events if isinstance(e, ModelRequest))
    assert request.messages == plan.messages


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--turn", "0"], "pick a turn from 1 to 3"),
        (["--turn", "4"], "pick a turn from 1 to 3"),
        (["--turn", "2", "--mock", "nope=x"], "valid ids: call_list"),
        (["--turn", "1", "--mock", "call_list=x"], "valid ids: none"),
        (["--turn", "2", "--mock", "noequals"], "--mock takes CALL_ID=TEXT or CALL_ID=@FILE"),
        (["--turn", "2", "--tool-schema", "x"], "--tool-schema takes NAME=JSON or NAME=@FILE"),
        (["--turn", "2", "--tool-description", "teleport=go"], "no tool 'teleport'"),
    ],
)
async def test_bad_fork_requests_exit_2_with_one_line(
    project: Project, capsys, flags: list[str], needle: str
) -> None:
    _, parent = await project.record(THREE_TURNS)
    code = await cli(
        "--home", str(project.home), "fork", parent.run_id, *flags, "--script", "unused.json"
    )
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


async def test_plan_errors_name_the_valid_choices(project: Project) -> None:
    path, _ = await project.record(THREE_TURNS)
    recording = read_recording_file(path)
    with pytest.raises(ForkError, match="valid ids: call_list, call_read, call_calc"):
        plan_fork(recording, ForkRequest(turn=3, mocks={"call_x": "?"}))


async def test_fork_without_builtin_tools_runs_no_new_builtin_call(
    project: Project, tmp_path: Path
) -> None:
    parent_path, parent = await project.record(THREE_TURNS)
    script = tmp_path / "later.json"
    later = [
        {"tool_calls": [{"id": "f1", "name": "list_dir", "arguments": {"path": "src"}}]},
        {"content": "Nothing to see."},
    ]
    script.write_text(json.dumps({"steps": later}), encoding="utf-8")
    code = await cli(
        "--home", str(project.home), "fork", parent.run_id, "--turn", "2",
        "--script", str(script), "--root", str(project.root), "--no-builtin-tools",
    )  # fmt: skip
    assert code == 0
    [fork] = [p for p in traces_dir(project.home).glob("*.jsonl") if p != parent_path]
    end = next(e for e in read_events(fork) if e["type"] == "tool_end")
    assert (end["name"], end["ok"], end["error"]) == ("list_dir", False, "unavailable")
