"""`workbench serve-model` as a real subprocess, spoken to by the plain openai SDK."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.engine.engine_support import THREE_TURNS, Project, cli, read_events
from tests.support.processes import WORKBENCH


@contextmanager
def serve(*args: str) -> Iterator[str]:
    """Start the server, read the base URL it prints, stop it with Ctrl-C at the end."""
    process = subprocess.Popen(
        [WORKBENCH, "serve-model", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        line = process.stdout.readline()  # blocks until the server is listening
        assert line.startswith("serving http://127.0.0.1:"), line + process.stderr.read()
        yield line.split()[1]
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert "Traceback" not in err


def recorded_requests(path: Path) -> dict[int, dict]:
    return {e["turn"]: e for e in read_events(path) if e["type"] == "model_request"}


async def test_plain_openai_sdk_gets_the_recorded_answers(project: Project) -> None:
    path, run = await project.record(THREE_TURNS)
    requests = recorded_requests(path)
    with serve("--replay", run.run_id, "--home", str(project.home)) as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
        assert [m.id for m in client.models.list().data] == ["scripted"]

        first = client.chat.completions.create(
            model="anything", messages=requests[1]["messages"], tools=requests[1]["tools"]
        )
        message = first.choices[0].message
        assert message.content == "Let me look around."
        functions = [c for c in message.tool_calls or [] if c.type == "function"]
        assert [(c.id, c.function.name) for c in functions] == [("call_list", "list_dir")]
        assert first.usage is not None and first.usage.total_tokens == 132

        stream = client.chat.completions.create(
            model="anything",
            messages=requests[2]["messages"],
            tools=requests[2]["tools"],
            stream=True,
        )
        calls: dict[int, list[str]] = {}
        for chunk in stream:
            for delta in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
                entry = calls.setdefault(delta.index, ["", ""])
                entry[0] += (delta.function.name or "") if delta.function else ""
                entry[1] += (delta.function.arguments or "") if delta.function else ""
        assert [(name, json.loads(args)) for name, args in calls.values()] == [
            ("read_file", {"path": "config.toml"}),
            ("calculator", {"expression": "8080 * 2"}),
        ]

        changed: list[Any] = [dict(m) for m in requests[3]["messages"]]
        changed[-1]["content"] = "something else"
        with pytest.raises(openai.ConflictError) as caught:
            client.chat.completions.create(
                model="anything", messages=changed, tools=requests[3]["tools"]
            )
        error = caught.value
        assert error.status_code == 409
        body = error.body
        assert isinstance(body, dict) and body["type"] == "replay_mismatch"
        assert body["turn"] == 3
        last = len(changed) - 1
        assert body["diffs"] == [
            {
                "path": f"messages[{last}].content",
                "recorded": requests[3]["messages"][-1]["content"],
                "replayed": "something else",
            }
        ]


def test_serves_a_script_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"name": "demo-model", "steps": [{"content": "Hi there."}]}))
    with serve("--script", str(script)) as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
        answer = client.chat.completions.create(
            model="demo-model", messages=[{"role": "user", "content": "Hello"}]
        )
        assert answer.choices[0].message.content == "Hi there."


async def test_bad_sources_exit_2_with_one_line(tmp_path: Path, capsys) -> None:
    for args in (
        ["--replay", "feedface", "--home", str(tmp_path)],
        ["--script", str(tmp_path / "missing.json")],
    ):
        code = await cli("serve-model", *args)
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err


async def test_our_own_client_reruns_a_recording_against_the_replay_responder(
    project: Project,
) -> None:
    from agent_core.model.openai_client import OpenAIChatModel
    from workbench.engine.http.model_server import ModelServer
    from workbench.engine.http.serve import ReplayResponder
    from workbench.engine.recording.runs.load import read_recording_file

    path, first = await project.record(THREE_TURNS)
    with ModelServer(ReplayResponder(read_recording_file(path))) as server:
        model = OpenAIChatModel(server.base_url, "sk-test", "scripted")
        _, again = await project.record(model)
        await model.aclose()
        requests = len(server.bodies)
    assert again.status == "completed" and again.final_answer == first.final_answer
    assert requests == 3  # one per recorded turn, none refused


async def test_a_non_streamed_recording_serves_streamed_requests_too(project: Project) -> None:
    from workbench.engine.http.model_server import ModelServer
    from workbench.engine.http.serve import ReplayResponder
    from workbench.engine.recording.runs.load import read_recording_file

    path, _ = await project.record(THREE_TURNS, stream=False)
    first = recorded_requests(path)[1]
    with ModelServer(ReplayResponder(read_recording_file(path))) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        whole = await client.chat.completions.create(
            model="m", messages=first["messages"], tools=first["tools"]
        )
        pieces = await client.chat.completions.create(
            model="m", messages=first["messages"], tools=first["tools"], stream=True
        )
        text, names = "", []
        async for chunk in pieces:
            delta = chunk.choices[0].delta if chunk.choices else None
            text += (delta.content or "") if delta else ""
            called = (delta.tool_calls or []) if delta else []
            names += [c.function.name for c in called if c.function]
        await client.close()
    assert whole.choices[0].message.content == text == "Let me look around."
    functions = [c for c in whole.choices[0].message.tool_calls or [] if c.type == "function"]
    assert [c.function.name for c in functions] == names
    assert names == ["list_dir"]


async def test_workbench_run_tries_a_mismatched_request_once(project: Project, capfd) -> None:
    # serve-model answers a request its recording does not match with 409 and
    # `x-should-retry: false`; retrying cannot help, so `run` stops after one attempt.
    _, recorded = await project.record(THREE_TURNS)
    home = project.home / "second"
    with serve("--replay", recorded.run_id, "--home", str(project.home)) as base_url:
        code = await cli(
            "run", "a task the recording never saw", "--base-url", base_url, "--model", "m",
            "--root", str(project.root), "--home", str(home),
            "--system", "You are a careful agent.",
        )  # fmt: skip
    out = capfd.readouterr().out
    assert code == 3
    [trace] = (home / "traces").glob("*.jsonl")
    events = read_events(trace)
    assert [e["attempt"] for e in events if e["type"] == "model_request"] == [1]
    [error] = [e for e in events if e["type"] == "error"]
    assert (error["status_code"], error["retriable"]) == (409, False)
    expected = (
        f"HTTP 409: request matches no recorded turn; closest is turn 1 of run "
        f"{recorded.run_id}: first difference at messages[1].content (not retried: the server "
        "sent x-should-retry: false)"
    )
    assert error["message"] == expected
    assert events[-1]["reason"] == f"model call failed: {expected}"
    assert f"! model status: {expected}" in out
