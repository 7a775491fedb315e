"""Offline replay: the real loop re-driven from a recording, compared event by event."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_core.agent import Agent, AgentConfig
from agent_core.mcp_tools import open_mcp_toolsets
from agent_core.model.openai_client import OpenAIChatModel
from agent_core.model.scripted import ScriptedModel
from tests.engine.engine_support import THREE_TURNS, Project, cli, read_events, write_events
from traces.home import traces_dir
from traces.writer import JsonlWriter
from workbench.engine.http.model_server import ModelServer, ScriptResponder
from workbench.engine.recording.replay.verify import ReplayStep, replay_run, replay_stream
from workbench.engine.recording.runs.load import RecordingError, load_recording, read_recording_file


async def test_scripted_run_replays_identically(project: Project) -> None:
    path, result = await project.record(THREE_TURNS)
    assert result.status == "completed"
    steps: list[ReplayStep] = []
    outcome = await replay_run(read_recording_file(path), on_step=steps.append)
    assert outcome.status == "identical", outcome.divergence
    assert outcome.exit_code == 0
    assert outcome.events_compared == outcome.events_recorded == len(read_events(path))
    assert outcome.turns_replayed == 3
    # Tool results came from the recording: flagged as replayed, nothing executed.
    ends = [s.replayed for s in steps if s.replayed.type == "tool_end"]
    assert ends and all(end.replayed for end in ends)  # type: ignore[union-attr]


async def test_a_recording_that_kept_its_transport_replays_as_the_same_requests(
    project: Project,
) -> None:
    # v1 traces kept `stream_options` in a request's params and null for the text of an
    # assistant tool-call message; the loop now sends neither. Read as the same request.
    path, _ = await project.record(THREE_TURNS)
    events, nulls = read_events(path), 0
    for event in events:
        if event["type"] == "model_request":
            event["params"]["stream_options"] = {"include_usage": True}
            for message in event["messages"]:
                if message["role"] == "assistant" and message["content"] == "":
                    message["content"] = None
                    nulls += 1
    assert nulls == 1  # turn 3's request: turn 2 answered with tool calls only
    older = project.home / "older.jsonl"
    write_events(older, events)
    outcome = await replay_run(read_recording_file(older))
    assert outcome.status == "identical", outcome.divergence
    assert outcome.turns_replayed == 3

    # The level that accepts those still names a parameter that changed.
    for event in events:
        if event["type"] == "model_request" and event["turn"] == 2:
            event["params"]["temperature"] = 0.5
    write_events(older, events)
    outcome = await replay_run(read_recording_file(older))
    assert outcome.divergence is not None and outcome.divergence.turn == 2
    assert [d.path for d in outcome.divergence.diffs] == ["params.temperature"]


async def test_run_through_the_real_client_replays_with_the_server_off(project: Project) -> None:
    with ModelServer(ScriptResponder(THREE_TURNS)) as server:
        model = OpenAIChatModel(server.base_url, "sk-test", "scripted")
        path, result = await project.record(model)
        await model.aclose()
    assert result.status == "completed"
    # The server is closed now; nothing can answer over the network.
    outcome = await replay_run(read_recording_file(path))
    assert outcome.status == "identical", outcome.divergence
    assert outcome.turns_replayed == 3


async def test_side_effect_tool_is_not_executed_on_replay(project: Project) -> None:
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"id": "n1", "name": "save_note", "arguments": {"text": "hello"}}]},
        {"content": "Saved."},
    ]
    path, _ = await project.record(steps, task="Save a note saying hello")
    notes = project.root / "notes.txt"
    assert notes.read_text() == "hello\n"
    outcome = await replay_run(read_recording_file(path))
    assert outcome.status == "identical", outcome.divergence
    assert notes.read_text() == "hello\n"  # the replay did not write it again


async def test_retries_non_streamed_answers_and_capped_results_replay(project: Project) -> None:
    (project.root / "big.txt").write_text("x" * 5000, encoding="utf-8")
    steps: list[dict[str, Any]] = [
        {"error": {"status": 503, "message": "overloaded"}},
        {"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "big.txt"}}]},
        {"error": {"kind": "connection", "message": "reset"}},
        {"content": "It is a lot of x."},
    ]
    from traces.events import Limits

    path, result = await project.record(steps, stream=False, limits=Limits(max_result_chars=300))
    events = read_events(path)
    assert result.status == "completed"
    assert [e["kind"] for e in events if e["type"] == "error"] == ["status", "connection"]
    assert any(e["type"] == "tool_end" and e["truncated"] for e in events)
    outcome = await replay_run(read_recording_file(path))
    assert outcome.status == "identical", outcome.divergence


async def test_edited_tool_result_stops_at_the_next_turn(project: Project, capsys) -> None:
    path, _ = await project.record(THREE_TURNS)
    events = read_events(path)
    edited = project.home / "edited.jsonl"
    for event in events:
        if event["type"] == "tool_end" and event["call_id"] == "call_read":
            event["result"] = event["result"].replace("8080", "9090")
    write_events(edited, events)

    outcome = await replay_run(read_recording_file(edited))
    assert outcome.status == "diverged"
    divergence = outcome.divergence
    assert divergence is not None
    assert (divergence.turn, divergence.event_type) == (3, "model_request")
    paths = [d.path for d in divergence.diffs]
    assert len(paths) == 1 and paths[0].startswith("messages[") and paths[0].endswith(".content")
    assert "8080" in divergence.diffs[0].recorded and "9090" in divergence.diffs[0].replayed

    code = await cli("--home", str(project.home), "replay", str(edited))
    out = capsys.readouterr().out
    assert code == 1
    assert "DIVERGED at turn 3, event model_request" in out
    assert ".content: recorded" in out and "9090" in out


async def test_replay_by_run_id_prefix_and_json(project: Project, capsys) -> None:
    _path, result = await project.record(THREE_TURNS)
    code = await cli("--home", str(project.home), "replay", result.run_id[:8], "--json")
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["status"] == "identical" and report["run_id"] == result.run_id


async def test_incomplete_last_turn_replays_up_to_it(project: Project, capsys) -> None:
    path, _ = await project.record(THREE_TURNS)
    lines = path.read_text().splitlines(keepends=True)
    # Cut the run inside turn 2, after its first tool_start (a killed run), half a line too.
    cut = next(i for i, line in enumerate(lines) if '"tool_start"' in line and '"turn":2' in line)
    killed = project.home / "killed.jsonl"
    killed.write_text("".join(lines[: cut + 1]) + lines[cut + 1][:20])

    outcome = await replay_run(read_recording_file(killed))
    assert outcome.status == "incomplete" and outcome.exit_code == 2
    assert outcome.events_compared == cut + 1
    assert "inside turn 2" in outcome.note

    code = await cli("--home", str(project.home), "replay", str(killed))
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.count("\n") == 1 and "inside turn 2" in captured.err
    assert "Traceback" not in captured.err


@pytest.mark.parametrize("damage", ["newer_schema", "corrupt_line", "no_run_start"])
async def test_unreplayable_recordings_exit_2_with_one_line(
    project: Project, capsys, damage: str
) -> None:
    path, _ = await project.record(THREE_TURNS)
    events = read_events(path)
    bad = project.home / f"{damage}.jsonl"
    if damage == "newer_schema":
        events[0]["schema_version"] = 99
        write_events(bad, events)
    elif damage == "corrupt_line":
        write_events(bad, events)
        lines = bad.read_text().splitlines(keepends=True)
        lines[3] = "{not json\n"
        bad.write_text("".join(lines))
    else:
        write_events(bad, events[1:])
    with pytest.raises(RecordingError):
        read_recording_file(bad)
    code = await cli("--home", str(project.home), "replay", str(bad))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    expected = {"newer_schema": "newer", "corrupt_line": "corrupt", "no_run_start": "run_start"}
    assert expected[damage] in err


async def test_unknown_run_exits_2(tmp_path: Path, capsys) -> None:
    code = await cli("--home", str(tmp_path), "replay", "feedface")
    err = capsys.readouterr().err
    assert code == 2 and "feedface" in err and err.count("\n") == 1


async def test_original_pace_follows_recorded_timing(project: Project) -> None:
    steps = [dict(THREE_TURNS[0], delay_ms=150), THREE_TURNS[1], THREE_TURNS[2]]
    path, _ = await project.record(steps)
    recording = load_recording(path, project.home)
    started = time.perf_counter()
    fast = await replay_run(recording)
    fast_s = time.perf_counter() - started
    started = time.perf_counter()
    items = [item async for item in replay_stream(recording, pace="original")]
    paced_s = time.perf_counter() - started
    assert fast.status == "identical" and items[-1].status == "identical"  # type: ignore[union-attr]
    assert paced_s >= 0.14 > fast_s


async def test_replay_copy_in_another_home_is_found_by_path(project: Project, tmp_path) -> None:
    path, _ = await project.record(THREE_TURNS)
    copy = tmp_path / "elsewhere" / path.name
    copy.parent.mkdir()
    shutil.copy(path, copy)
    outcome = await replay_run(load_recording(copy, tmp_path / "nohome"))
    assert outcome.status == "identical"


MCP_TIME = Path(sys.executable).with_name("mcp-server-time")


@pytest.mark.skipif(not MCP_TIME.exists(), reason="scripts/install-mcp-servers.sh not run")
async def test_mcp_tool_run_replays_without_starting_the_server(
    project: Project, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    server = {"command": str(MCP_TIME), "args": ["--local-timezone", "UTC"]}
    config.write_text(json.dumps({"mcpServers": {"time": server}}))
    steps: list[dict[str, Any]] = [
        {
            "tool_calls": [
                {"id": "t1", "name": "get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}
            ]
        },
        {"content": "It is late in Tokyo."},
    ]
    run_config = AgentConfig(task="What time is it in Tokyo?")
    writer = JsonlWriter(traces_dir(project.home), run_config.run_id)
    agent = Agent(ScriptedModel(steps), [], run_config, sinks=[writer])
    async with open_mcp_toolsets(config, agent.recorder) as toolsets:
        agent.toolsets.extend(toolsets)
        assert (await agent.run()).status == "completed"
    events = read_events(writer.path)
    assert any(e["type"] == "mcp_message" for e in events)
    assert any(e["type"] == "tool_start" and e["source"] == "mcp:time" for e in events)

    # No MCP server is configured or started for the replay; results come from the trace.
    outcome = await replay_run(read_recording_file(writer.path))
    assert outcome.status == "identical", outcome.divergence
    assert outcome.turns_replayed == 2


async def test_model_timeout_replays_without_waiting(project: Project) -> None:
    from traces.events import Limits

    steps = [dict(THREE_TURNS[0], delay_ms=400)]
    path, result = await project.record(steps, limits=Limits(model_timeout_s=0.1))
    assert (result.status, result.timeout_layer) == ("timeout", "model")
    started = time.perf_counter()
    outcome = await replay_run(read_recording_file(path))
    assert outcome.status == "identical", outcome.divergence
    assert time.perf_counter() - started < 0.1


async def test_cancelled_run_replays_up_to_the_cancel(project: Project) -> None:
    run_config = AgentConfig(task="Look around", system_prompt="You are a careful agent.")
    writer = JsonlWriter(traces_dir(project.home), run_config.run_id)
    agent = Agent(ScriptedModel(THREE_TURNS), project.toolsets(), run_config, sinks=[writer])
    stream = agent.run_stream()
    async for item in stream:
        if getattr(item, "type", None) == "tool_end":
            break  # the reader walks away after the first tool result
    await stream.aclose()  # type: ignore[attr-defined]
    assert agent.result is not None and agent.result.status == "cancelled"
    outcome = await replay_run(read_recording_file(writer.path))
    assert outcome.status == "identical", outcome.divergence
    assert "cancellation" in outcome.note


async def test_edited_model_chunk_diverges_at_the_assembled_response(project: Project) -> None:
    path, _ = await project.record(THREE_TURNS)
    events = read_events(path)
    for event in events:
        if event["type"] != "model_chunk" or event["turn"] != 2:
            continue
        for call in event["data"]["choices"][0]["delta"].get("tool_calls") or []:
            arguments = call.get("function", {}).get("arguments") or ""
            call["function"]["arguments"] = arguments.replace("config.toml", "config.yaml")
    edited = project.home / "edited-chunks.jsonl"
    write_events(edited, events)
    outcome = await replay_run(read_recording_file(edited))
    divergence = outcome.divergence
    assert outcome.status == "diverged" and divergence is not None
    # The chunks are re-assembled by the real assembler, so the recorded message no longer
    # matches what they add up to.
    assert (divergence.turn, divergence.event_type) == (2, "model_response")
    [diff] = divergence.diffs
    assert diff.path == "message.tool_calls[0].function.arguments"
    assert "config.toml" in diff.recorded and "config.yaml" in diff.replayed


async def test_trimmed_history_replays(project: Project) -> None:
    from traces.events import Limits

    (project.root / "long.txt").write_text("lorem ipsum dolor sit amet " * 120, encoding="utf-8")
    read: dict[str, Any] = {"name": "read_file", "arguments": {"path": "long.txt"}}
    steps: list[dict[str, Any]] = [
        {"content": f"Reading, pass {n}.", "tool_calls": [dict(read, id=f"r{n}")]}
        for n in range(1, 5)
    ]
    for n, step in enumerate(steps, 1):
        step["tool_calls"][0]["arguments"] = {"path": "long.txt", "start_line": n}
    steps.append({"content": "It is all lorem ipsum."})
    path, result = await project.record(
        steps, limits=Limits(context_window=2000, keep_rounds=1, token_budget=10**6)
    )
    assert result.status == "completed", result.reason
    assert any(e["type"] == "history_trimmed" for e in read_events(path))
    outcome = await replay_run(read_recording_file(path))
    assert outcome.status == "identical", outcome.divergence


async def test_run_offering_the_reasoning_argument_replays(project: Project) -> None:
    steps = json.loads(json.dumps(THREE_TURNS))
    steps[0]["tool_calls"][0]["arguments"]["reasoning"] = "See what is there first."
    path, result = await project.record(steps, offer_reasoning=True)
    assert result.status == "completed"
    start = next(e for e in read_events(path) if e["type"] == "tool_start")
    assert start["reasoning"] == "See what is there first."
    outcome = await replay_run(read_recording_file(path))
    assert outcome.status == "identical", outcome.divergence


async def test_speed_implies_the_original_pace_and_contradicting_it_is_an_error(
    project: Project, capsys
) -> None:
    _, result = await project.record(THREE_TURNS)
    home = str(project.home)
    code = await cli("--home", home, "replay", result.run_id, "--speed", "1000", "--json")
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and (report["pace"], report["speed"]) == ("original", 1000.0)
    code = await cli("--home", home, "replay", result.run_id, "--pace", "fast", "--speed", "4")
    err = capsys.readouterr().err
    assert code == 2 and "--speed" in err and err.count("\n") == 1
    code = await cli("--home", home, "replay", result.run_id, "--json")
    assert json.loads(capsys.readouterr().out)["pace"] == "fast"


async def test_an_ambiguous_run_prefix_lists_the_candidates(project: Project, capsys) -> None:
    path, _ = await project.record(THREE_TURNS)
    folder = path.parent
    for twin in ("abc111", "abc222"):
        (folder / f"{twin}.jsonl").write_text(path.read_text().replace(path.stem, twin))
    said = set()
    for command in (
        ["replay", "abc"],
        ["show", "abc"],
        ["fork", "abc", "--turn", "1"],
        ["serve-model", "--replay", "abc"],
        ["capture-case", "abc", "--turn", "1", "--suite", str(project.home / "s.toml")],
    ):
        code = await cli("--home", str(project.home), *command)
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        said.add(err)
    # Every command says it in the same words.
    assert said == {
        "workbench: run id 'abc' matches 2 runs (abc111, abc222); give more characters of it\n"
    }


async def test_recording_with_null_content_on_tool_calls_still_replays(project: Project) -> None:
    # Older recordings sent an assistant tool-call message as `"content": null`; the loop now
    # sends "". Both mean "no text", so the replay must agree.
    path, _ = await project.record(THREE_TURNS)
    lines = []
    nulls = 0
    for event in read_events(path):
        messages = [*event.get("messages", []), event.get("message") or {}]
        for message in messages:
            if message.get("tool_calls") and message.get("content") == "":
                message["content"] = None
                nulls += 1
        lines.append(event)
    assert nulls >= 2  # turn 2's answer, and the request of turn 3 that carries it
    write_events(path, lines)
    outcome = await replay_run(read_recording_file(path))
    assert outcome.status == "identical", outcome.divergence


async def test_an_imported_run_is_refused_with_a_reason_not_a_divergence(
    project: Project,
) -> None:
    import dataclasses

    from workbench.engine.recording.replay.verify import NotReplayable

    path, _ = await project.record(THREE_TURNS)
    recording = read_recording_file(path)
    start = recording.run_start.model_copy(update={"origin": "imported", "client": "otel"})
    imported = dataclasses.replace(recording, run_start=start)
    with pytest.raises(NotReplayable, match=r"imported from otel; .* cannot verify it"):
        await replay_run(imported)


async def test_token_estimates_are_compared_in_recordings_of_this_schema_version_only(
    project: Project,
) -> None:
    """A recording written in an older schema version was estimated by an older workbench's
    estimator: its estimates are not what the replay checks. One of this version's is."""
    golden = next((Path(__file__).parents[1] / "fixtures/traces/v2").glob("*.jsonl"))
    events = read_events(golden)
    for event in events:
        if event["type"] == "model_request":
            event["estimated_tokens"] += 1000
    project.home.mkdir(parents=True, exist_ok=True)
    older = project.home / "older.jsonl"
    write_events(older, events)
    outcome = await replay_run(read_recording_file(older))
    assert outcome.status == "identical", outcome.divergence

    path, _ = await project.record(THREE_TURNS)
    events = read_events(path)
    for event in events:
        if event["type"] == "model_request":
            event["estimated_tokens"] += 1000
    current = project.home / "current.jsonl"
    write_events(current, events)
    outcome = await replay_run(read_recording_file(current))
    assert outcome.divergence is not None
    assert [d.path for d in outcome.divergence.diffs] == ["estimated_tokens"]


def test_a_long_run_replays_in_the_memory_of_a_short_one(tmp_path: Path) -> None:
    """A trace is streamed beside the replay a turn at a time, never read whole: a run four
    times as long replays identically, its extra turns taking a tenth of their bytes (the
    index of where each tool result is), where read whole as models they took some ten
    times their bytes (the 200,000 events of bench/scale.py's long run: 0.7–0.9 GB)."""
    import asyncio
    import tracemalloc

    from tests.support.big_traces import long_agent_run
    from workbench.engine.recording.replay.streamed import streamed_source

    peaks: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for turns in (60, 240):
        path = long_agent_run(tmp_path, f"{turns:032d}", turns, 20, context_window=2000)
        asyncio.run(replay_run(streamed_source(path)))  # imports and caches, unmeasured
        tracemalloc.start()
        try:
            outcome = asyncio.run(replay_run(streamed_source(path)))
            peaks[turns] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert outcome.status == "identical", outcome.divergence
        assert outcome.events_compared == outcome.events_recorded == len(read_events(path))
        assert outcome.turns_replayed == turns
        sizes[turns] = path.stat().st_size
    assert peaks[240] - peaks[60] < (sizes[240] - sizes[60]) / 10, (peaks, sizes)
