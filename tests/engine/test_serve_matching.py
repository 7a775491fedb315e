"""`serve-model` matches requests by meaning, so clients other than ours replay a recording.

Each test sends what a real framework sends (the quirks named in the capture issue) with the
official openai SDK to `workbench serve-model` run as a subprocess.
"""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.engine.engine_support import THREE_TURNS, Project
from tests.engine.test_serve_model import recorded_requests, serve


def client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)


def framework_style(request: dict[str, Any]) -> dict[str, Any]:
    """The recorded request as pydantic-ai, the Agents SDK and LangChain would send it."""
    sent = copy.deepcopy(request)
    for tool in sent["tools"]:
        tool["function"]["strict"] = False
        tool["function"]["parameters"]["additionalProperties"] = False
    for message in sent["messages"]:
        if message["role"] == "user":
            message["content"] = [{"type": "text", "text": message["content"]}]
        for call in message.get("tool_calls") or []:
            # LangChain writes `{"path": "."}` for the model's `{"path":"."}`.
            call["function"]["arguments"] = json.dumps(json.loads(call["function"]["arguments"]))
    return sent


def ask(base_url: str, request: dict[str, Any], **extra: Any) -> Any:
    return client(base_url).chat.completions.create(
        model="anything", messages=request["messages"], tools=request["tools"], **extra
    )


async def test_framework_requests_match_by_meaning(project: Project) -> None:
    path, run = await project.record(THREE_TURNS)
    requests = recorded_requests(path)
    defaults = {"tool_choice": "auto", "parallel_tool_calls": True}
    with serve("--replay", run.run_id, "--home", str(project.home)) as base_url:
        answers = [ask(base_url, framework_style(requests[n]), **defaults) for n in (1, 2, 3)]
    assert [len(a.choices[0].message.tool_calls or []) for a in answers] == [1, 2, 0]
    assert answers[2].choices[0].message.content == THREE_TURNS[2]["content"]
    # The reformatted arguments are really in the request: the test does not pass vacuously.
    sent = framework_style(requests[3])["messages"]
    arguments = [c["function"]["arguments"] for m in sent for c in m.get("tool_calls") or []]
    assert '{"path": "."}' in arguments


async def test_session_ids_a_client_sends_do_not_stop_a_replay(project: Project) -> None:
    # Claude Code sends `metadata.user_id` (device and session ids), Codex
    # `prompt_cache_key` and `client_metadata`: new on every run of the same task.
    path, run = await project.record(THREE_TURNS)
    requests = recorded_requests(path)
    session = {
        "metadata": {"user_id": '{"device_id":"d2","session_id":"s2"}'},
        "extra_body": {"prompt_cache_key": "s2", "client_metadata": {"turn_id": "t2"}},
    }
    with serve("--replay", run.run_id, "--home", str(project.home)) as base_url:
        answer = ask(base_url, requests[1], **session)
        assert answer.choices[0].message.content == "Let me look around."
        # A parameter that changes the answer still does not match.
        with pytest.raises(openai.ConflictError) as caught:
            ask(base_url, requests[2], temperature=1.5, **session)
    body = caught.value.body
    assert isinstance(body, dict) and [d["path"] for d in body["diffs"]] == ["params.temperature"]


async def test_match_exact_keeps_byte_for_byte(project: Project) -> None:
    path, run = await project.record(THREE_TURNS)
    requests = recorded_requests(path)
    home = str(project.home)
    with serve("--replay", run.run_id, "--home", home, "--match", "exact") as base_url:
        assert ask(base_url, requests[1]).choices[0].message.content == "Let me look around."
        with pytest.raises(openai.ConflictError) as caught:
            ask(base_url, framework_style(requests[1]))
    body = caught.value.body
    assert isinstance(body, dict) and body["turn"] == 1
    assert body["diffs"][0]["path"] == "messages[1].content"


async def test_a_mismatch_is_diffed_against_the_closest_turn(project: Project) -> None:
    path, run = await project.record(THREE_TURNS)
    requests = recorded_requests(path)
    with serve("--replay", run.run_id, "--home", str(project.home)) as base_url:
        for n in (1, 2, 3):  # the server now expects nothing; a changed turn-1 request comes
            ask(base_url, requests[n])
        changed = copy.deepcopy(requests[1])
        changed["messages"][-1]["content"] = "What is in README.md?"
        with pytest.raises(openai.ConflictError) as caught:
            ask(base_url, changed)
    body = caught.value.body
    assert isinstance(body, dict) and body["turn"] == 1 and body["run_id"] == run.run_id
    assert [d["path"] for d in body["diffs"]] == ["messages[1].content"]
    assert "closest is turn 1" in body["message"]


async def test_several_runs_answer_each_request_from_its_own_run(project: Project) -> None:
    path_a, run_a = await project.record(THREE_TURNS)
    other = [{"content": "Nothing to do."}]
    path_b, run_b = await project.record(other, task="Say hello.")
    # The same task recorded twice with different answers: served in turn, like a cassette.
    again = [{**THREE_TURNS[0], "content": "Looking around again."}, *THREE_TURNS[1:]]
    _, run_c = await project.record(again)
    a, b = recorded_requests(path_a), recorded_requests(path_b)
    home = str(project.home)
    ids = [run_a.run_id, run_b.run_id, run_c.run_id]
    with serve("--replay", *ids, "--home", home) as base_url:
        models = [m.id for m in client(base_url).models.list().data]
        first = ask(base_url, a[1]).choices[0].message.content
        hello = ask(base_url, b[1]).choices[0].message.content
        second = ask(base_url, a[1]).choices[0].message.content
        final = ask(base_url, a[3]).choices[0].message.content
    assert models == ["scripted"]
    assert hello == "Nothing to do."
    assert {first, second} == {"Let me look around.", "Looking around again."}
    assert final == THREE_TURNS[2]["content"]


async def test_every_run_with_a_name(project: Project) -> None:
    path, _ = await project.record(THREE_TURNS, meta={"name": "nightly"})
    await project.record([{"content": "unnamed"}], task="Say hello.")
    requests = recorded_requests(path)
    with serve("--replay-name", "nightly", "--home", str(project.home)) as base_url:
        assert ask(base_url, requests[1]).choices[0].message.content == "Let me look around."
        with pytest.raises(openai.ConflictError):
            ask(base_url, {"messages": [{"role": "user", "content": "Say hello."}], "tools": []})


FIXTURE_TEST = """
import openai

def test_offline(workbench_replay):
    base_url = workbench_replay(name="nightly", home={home!r})
    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
    answer = client.chat.completions.create(model="m", messages={messages!r}, tools={tools!r})
    assert answer.choices[0].message.content == "Let me look around."

def test_unknown_run(workbench_replay):
    workbench_replay("feedface", home={home!r})
"""


async def test_the_pytest_fixture_serves_named_runs(project: Project, tmp_path: Path) -> None:
    path, _ = await project.record(THREE_TURNS, meta={"name": "nightly"})
    first = recorded_requests(path)[1]
    test_file = tmp_path / "suite" / "test_offline.py"
    test_file.parent.mkdir()
    test_file.write_text(
        FIXTURE_TEST.format(
            home=str(project.home), messages=first["messages"], tools=first["tools"]
        )
    )
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(test_file)]
    done = await asyncio.to_thread(
        lambda: subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    )
    assert "1 failed, 1 passed" in done.stdout, done.stdout + done.stderr
    assert "workbench_replay: " in done.stdout and "feedface" in done.stdout


async def test_runs_with_the_same_first_request_are_served_in_recording_order(
    project: Project,
) -> None:
    # However the ids are given (`runs` lists the newest first), the first client to send
    # the shared first request gets the answer recorded first.
    _, first = await project.record([{"content": "recorded first"}])
    path, second = await project.record([{"content": "recorded second"}])
    request = recorded_requests(path)[1]
    replay = ["--replay", second.run_id, first.run_id, "--home", str(project.home)]
    with serve(*replay) as base_url:
        answers = [ask(base_url, request).choices[0].message.content for _ in range(2)]
    assert answers == ["recorded first", "recorded second"]
