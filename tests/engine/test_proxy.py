"""`workbench proxy` records an openai-SDK agent's runs; `serve-model` replays them offline."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import openai
import pytest
from capture_support import API_KEY, STEPS, TASK, read_run, run_agent, runs
from test_serve_model import serve

from tests.support.servers import Sequence, text_chunks
from workbench.engine.model_server import ModelServer, Reply, ScriptResponder
from workbench.engine.proxy import RecordingProxy

WORKBENCH = str(Path(sys.executable).with_name("workbench"))


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_an_openai_sdk_agent_is_recorded_and_replays_offline(tmp_path: Path, stream: bool) -> None:
    home = tmp_path / "home"
    with (
        ModelServer(ScriptResponder(STEPS, model="demo-model")) as upstream,
        RecordingProxy(upstream.base_url, home) as proxy,
    ):
        answer = run_agent(proxy.base_url, stream=stream)
        sent = upstream.requests
    assert answer == STEPS[1]["content"]
    # The client's credentials went upstream, and nowhere near the trace.
    assert all(r.headers["authorization"] == f"Bearer {API_KEY}" for r in sent)
    events = read_run(home)
    assert API_KEY not in json.dumps(events)

    start, end = events[0], events[-1]
    assert start["type"] == "run_start" and start["origin"] == "captured"
    assert start["client"].startswith("OpenAI/Python")
    assert start["task"] == TASK and start["model"] == "demo-model"
    assert start["base_url"] == upstream.base_url
    assert [t["function"]["name"] for t in start["tools"]] == ["read_file", "calculator"]
    assert end["type"] == "run_end" and end["status"] == "completed"
    assert end["final_answer"] == STEPS[1]["content"]

    requests = [e for e in events if e["type"] == "model_request"]
    assert [(r["turn"], r["stream"]) for r in requests] == [(1, stream), (2, stream)]
    assert requests[1]["messages"] == sent[1].body["messages"]
    chunks = [e for e in events if e["type"] == "model_chunk" and e["turn"] == 1]
    assert len(chunks) > (2 if stream else 0) and all(c["elapsed_ms"] >= 0 for c in chunks)
    starts = [e for e in events if e["type"] == "tool_start"]
    ends = [e for e in events if e["type"] == "tool_end"]
    assert [(s["turn"], s["name"], s["arguments"]) for s in starts] == [
        (1, "read_file", {"path": "config.toml"}),
        (1, "calculator", {"expression": "8080 * 2"}),
    ]
    assert [(e["call_id"], e["ok"], e["observed"], e["result"]) for e in ends] == [
        ("call_read", True, True, 'name = "demo"\nport = 8080\n'),
        ("call_calc", True, True, "16160"),
    ]
    assert [e["seq"] for e in events] == list(range(len(events)))

    # Offline: the capture, served by `workbench serve-model`, answers the same agent.
    with serve("--replay", start["run_id"], "--home", str(home)) as base_url:
        assert run_agent(base_url, stream=stream) == answer


def test_streams_pass_through_unchanged(tmp_path: Path) -> None:
    reply = Reply(
        chunks=[": keep-alive", *text_chunks("Hello there, friend.", usage={"total_tokens": 3})]
    )
    with (
        ModelServer(lambda body: reply) as upstream,
        RecordingProxy(upstream.base_url, tmp_path / "home") as proxy,
    ):
        raw = []
        for base_url in (upstream.base_url, proxy.base_url):
            client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)
            response = client.chat.completions.with_raw_response.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            raw.append(response.http_response.read())
            client.close()
    assert raw[0] == raw[1] and b": keep-alive" in raw[1]
    events = read_run(tmp_path / "home")
    recorded = [e["data"] for e in events if e["type"] == "model_chunk"]
    assert recorded == [c for c in reply.chunks or [] if isinstance(c, dict)]
    assert events[-1]["final_answer"] == "Hello there, friend."


def test_models_pass_through(tmp_path: Path) -> None:
    with (
        ModelServer(ScriptResponder([]), model="upstream-model") as upstream,
        RecordingProxy(upstream.base_url, tmp_path / "home") as proxy,
    ):
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        assert [m.id for m in client.models.list().data] == ["upstream-model"]
    assert not (tmp_path / "home" / "traces").exists() or runs(tmp_path / "home") == []


def test_upstream_errors_reach_the_client_unchanged_and_a_retry_is_the_next_attempt(
    tmp_path: Path,
) -> None:
    limited = Reply(
        status=429,
        headers={"Retry-After": "7", "x-should-retry": "false"},
        body={"error": {"message": "slow down", "type": "rate_limit"}},
    )
    home = tmp_path / "home"
    ask = [{"role": "user", "content": "hi"}]
    with (
        ModelServer(Sequence(limited, Reply(chunks=text_chunks("Hi!")))) as upstream,
        RecordingProxy(upstream.base_url, home) as proxy,
    ):
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(model="m", messages=ask, stream=True)
        answer = client.chat.completions.create(model="m", messages=ask, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in answer if c.choices)
    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.body == {"message": "slow down", "type": "rate_limit"}
    assert text == "Hi!"
    events = read_run(home)
    error = next(e for e in events if e["type"] == "error")
    assert (error["status_code"], error["attempt"], error["turn"]) == (429, 1, 1)
    assert "slow down" in error["message"]
    requests = [(e["turn"], e["attempt"]) for e in events if e["type"] == "model_request"]
    assert requests == [(1, 1), (1, 2)]
    assert events[-1]["status"] == "completed"


def test_runs_from_traffic_names_follow_ups_and_separate_conversations(tmp_path: Path) -> None:
    home = tmp_path / "home"
    hello = [{"role": "user", "content": "Say hello."}]
    with (
        ModelServer(lambda body: Reply(chunks=text_chunks("Hello."))) as upstream,
        RecordingProxy(upstream.base_url, home) as proxy,
    ):
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)

        def ask(messages: list, **headers: str) -> None:
            client.chat.completions.create(model="m", messages=messages, extra_headers=headers)

        ask(hello, **{"X-Workbench-Run": "greeting"})
        ask(hello)  # the same first message again: another conversation, another run
        follow = [*hello, {"role": "assistant", "content": "Hello."}]
        ask([*follow, {"role": "user", "content": "Again, louder."}])
    first, second, third = runs(home)
    assert first[0]["meta"]["name"] == "greeting" and "name" not in second[0]["meta"]
    assert [e["type"] for e in first][-1] == "run_end"
    # The follow-up continues the later unnamed conversation? No: both ended "completed",
    # the newest conversation it extends is its parent.
    assert third[0]["parent_run_id"] == second[0]["run_id"]
    assert third[0]["task"] == "Again, louder."
    assert [e["messages"] for e in third if e["type"] == "model_request"][0][-1] == {
        "role": "user",
        "content": "Again, louder.",
    }


def test_a_client_that_goes_away_leaves_an_incomplete_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    slow = Reply(chunks=text_chunks("one two three four"), chunk_delay_s=30)
    quick = Reply(chunks=text_chunks("done"))
    with (
        ModelServer(Sequence(slow, quick)) as upstream,
        RecordingProxy(upstream.base_url, home) as proxy,
    ):
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "count"}], stream=True
        )
        next(iter(stream))
        stream.close()
        client.close()
        # A whole exchange after the hang-up: the proxy has seen the hang-up by its end.
        other = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        other.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        other.close()
    first = runs(home)[0]
    assert first[1]["messages"] == [{"role": "user", "content": "count"}]
    events = first
    assert "run_end" not in [e["type"] for e in events]
    assert [e["type"] for e in events][:3] == ["run_start", "model_request", "model_chunk"]


def test_stopping_the_proxy_cancels_runs_waiting_for_their_client(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with ModelServer(ScriptResponder(STEPS)) as upstream:
        process = subprocess.Popen(
            [WORKBENCH, "proxy", "--upstream", upstream.base_url, "--home", str(home)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("proxying http://127.0.0.1:"), line
        client = openai.OpenAI(base_url=line.split()[1], api_key="k", max_retries=0)
        first = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": TASK}]
        )
        client.close()
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    assert process.returncode == 0 and "Traceback" not in err
    assert first.choices[0].message.tool_calls
    events = read_run(home)
    assert events[-1]["type"] == "run_end" and events[-1]["status"] == "cancelled"
