"""`workbench proxy` records an openai-SDK agent's runs; `serve-model` replays them offline."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.engine.capture_support import API_KEY, STEPS, TASK, TOOLS, read_run, run_agent, runs
from tests.engine.test_serve_model import serve
from tests.support.processes import WORKBENCH
from tests.support.servers import (
    Sequence,
    hang_up_after_first_chunk,
    open_streams_at_once,
    recording_proxy,
    text_chunks,
)
from workbench.engine.http.model_server import ModelServer, Reply, ScriptResponder
from workbench.engine.http.proxy import RecordingProxy


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_an_openai_sdk_agent_is_recorded_and_replays_offline(tmp_path: Path, stream: bool) -> None:
    home = tmp_path / "home"
    with recording_proxy(ScriptResponder(STEPS, model="demo-model"), home) as (upstream, proxy):
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
    with recording_proxy(lambda body: reply, tmp_path / "home") as (upstream, proxy):
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
    ask: list[Any] = [{"role": "user", "content": "hi"}]
    with recording_proxy(Sequence(limited, Reply(chunks=text_chunks("Hi!"))), home) as (
        _,
        proxy,
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
    with recording_proxy(lambda body: Reply(chunks=text_chunks("Hello.")), home) as (
        _,
        proxy,
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
    assert next(e["messages"] for e in third if e["type"] == "model_request")[-1] == {
        "role": "user",
        "content": "Again, louder.",
    }


def test_a_client_that_goes_away_leaves_an_incomplete_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    slow = Reply(chunks=text_chunks("one two three four"), chunk_delay_s=30)
    quick = Reply(chunks=text_chunks("done"))
    with recording_proxy(Sequence(slow, quick), home) as (_, proxy):
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        hang_up_after_first_chunk(client)
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


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_stopping_the_proxy_cancels_runs_waiting_for_their_client(
    tmp_path: Path, stop: signal.Signals
) -> None:
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
        process.send_signal(stop)
        _, err = process.communicate(timeout=20)
    assert process.returncode == 0 and "Traceback" not in err
    assert first.choices[0].message.tool_calls
    events = read_run(home)
    assert events[-1]["type"] == "run_end" and events[-1]["status"] == "cancelled"


def test_an_unreachable_upstream_is_a_502_with_one_line(tmp_path: Path) -> None:
    with ModelServer(ScriptResponder([])) as gone:
        address = gone.base_url  # a port nobody listens on once this server is closed
    home = tmp_path / "home"
    with RecordingProxy(address, home) as proxy:
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.InternalServerError) as caught:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
    assert caught.value.status_code == 502
    assert f"cannot reach the upstream {address}" in str(caught.value)
    error = next(e for e in read_run(home) if e["type"] == "error")
    assert error["kind"] == "connection" and error["status_code"] == 502


def test_an_upstream_that_breaks_off_mid_stream_cuts_the_client_too(tmp_path: Path) -> None:
    broken = Reply(chunks=text_chunks("one two three four"), drop_after=2)
    home = tmp_path / "home"
    with recording_proxy(lambda body: broken, home) as (_, proxy):
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "count"}], stream=True
        )
        with pytest.raises(openai.APIError):
            for _ in stream:
                pass
    events = read_run(home)
    assert [e["type"] for e in events].count("model_chunk") == 2
    error = next(e for e in events if e["type"] == "error")
    assert error["kind"] == "connection" and "broke off" in error["message"]
    # The run waited for a retry; stopping the proxy ended it.
    assert events[-1]["status"] == "cancelled"


async def test_bad_and_oversized_requests_are_answered_by_the_proxy(tmp_path: Path) -> None:
    from tests.engine.test_serve_hardening import exchange, post_head

    with (
        ModelServer(ScriptResponder([])) as upstream,
        RecordingProxy(upstream.base_url, tmp_path / "home", max_request_bytes=2048) as proxy,
    ):
        big = json.dumps({"messages": [{"role": "user", "content": "x" * 4096}]}).encode()
        deep = b"[" * 100_000 + b"]" * 100_000
        answers = [
            await exchange(proxy.base_url, post_head(str(len(body))), body)
            for body in (big, b'{"a": "\xff"}', deep[:2000])
        ]
        answers.append(await exchange(proxy.base_url, post_head("-3"), b""))
        assert upstream.bodies == []  # nothing bad went upstream
    assert [status for status, _ in answers] == [413, 400, 400, 400]
    assert "limit of 2048 bytes" in json.loads(answers[0][1])["error"]["message"]


async def test_holds_200_concurrent_streams(tmp_path: Path) -> None:
    # Each upstream stream holds after its first chunk until the upstream stops, so all 200
    # are open through the proxy at once when every client has its first chunk.
    reply = Reply(chunks=text_chunks("one two"), stall_after=1)
    streams = 200
    with (
        ModelServer(lambda body: reply, keep_requests=False) as upstream,
        RecordingProxy(upstream.base_url, tmp_path / "home") as proxy,
    ):
        assert await open_streams_at_once(proxy.base_url, streams) == streams
    assert len(runs(tmp_path / "home")) == streams


def test_a_key_the_client_echoes_in_a_message_is_redacted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with recording_proxy(lambda body: Reply(chunks=text_chunks("noted")), home) as (
        _,
        proxy,
    ):
        client = openai.OpenAI(base_url=proxy.base_url, api_key=API_KEY, max_retries=0)
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"my key is {API_KEY}"}]
        )
    text = json.dumps(read_run(home))
    assert API_KEY not in text and "[REDACTED:api_key]" in text


def test_a_request_that_cannot_be_recorded_is_still_forwarded(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    odd: Any = ["not a message object", "nor this"]
    with recording_proxy(
        lambda body: Reply(body={"choices": []}, status=200), tmp_path / "home"
    ) as (upstream, proxy):
        for _ in range(2):
            raw = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
            answer = raw.chat.completions.with_raw_response.create(model="m", messages=odd)
            assert answer.http_response.status_code == 200
        assert [body["messages"] for body in upstream.bodies] == [odd, odd]
    assert not (tmp_path / "home" / "traces").exists() or runs(tmp_path / "home") == []
    err = capfd.readouterr().err
    assert err.count("workbench proxy: could not record an exchange") == 1
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_client_that_echoes_the_answer_with_fields_of_its_own_continues_its_run(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    with recording_proxy(ScriptResponder(STEPS), home) as (_, proxy):
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        history: Any = [{"role": "user", "content": TASK}]
        first = client.chat.completions.create(model="m", messages=history)
        answer = first.choices[0].message.model_dump(exclude_none=True)
        calls = answer["tool_calls"]
        # What some clients send back: the provider's reasoning, empty extras, no `type`.
        answer.update(reasoning_content="I should read the file.", annotations=[])
        for call in calls:
            call.pop("type")
        history += [answer]
        history += [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]
        client.chat.completions.create(model="m", messages=history)
    events = read_run(home)
    assert [e["turn"] for e in events if e["type"] == "model_request"] == [1, 2]
    assert events[-1]["status"] == "completed"


def test_a_captured_run_counts_tokens_as_the_agent_loop_does(tmp_path: Path) -> None:
    """The provider's usage where an answer carries it, else the estimates of the prompt
    (the request's `estimated_tokens`) and of the answer."""
    home = tmp_path / "home"
    answers = iter(
        [
            text_chunks("No usage here."),
            text_chunks("Counted.", usage={"prompt_tokens": 70, "completion_tokens": 2}),
        ]
    )
    with recording_proxy(lambda body: Reply(chunks=next(answers)), home) as (_, proxy):
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        for text in ("Say something.", "Say something else."):
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": text}], stream=True
            )
    estimated, counted = runs(home)
    request = next(e for e in estimated if e["type"] == "model_request")
    totals = estimated[-1]["totals"]
    assert request["estimated_tokens"] > 0
    assert totals["input_tokens"] == request["estimated_tokens"]
    assert totals["output_tokens"] > 0
    assert totals["total_tokens"] == totals["input_tokens"] + totals["output_tokens"]
    assert counted[-1]["totals"]["input_tokens"] == 70
    assert counted[-1]["totals"]["output_tokens"] == 2
    assert counted[-1]["totals"]["total_tokens"] == 72


def test_arguments_with_a_trailing_comma_are_recorded_as_the_loop_reads_them(
    tmp_path: Path,
) -> None:
    """The client ran the call (its own lenient parsing); the capture records the repaired
    arguments as the agent loop would, not a parse error."""
    raw = '{"path": "README.md",}'
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"id": "call_r", "name": "read_file", "arguments": raw}]},
        {"content": "It says hello."},
    ]
    home = tmp_path / "home"
    with recording_proxy(ScriptResponder(steps), home) as (_, proxy):
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        messages: list[Any] = [{"role": "user", "content": "Read README.md."}]
        first = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        asked = first.choices[0].message
        assert asked.tool_calls and asked.tool_calls[0].function.arguments == raw  # type: ignore[union-attr]
        messages.append(asked.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": "call_r", "content": "# hello"})
        client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        client.close()
    [start] = [e for e in read_run(home) if e["type"] == "tool_start"]
    assert start["arguments_raw"] == raw
    assert start["arguments"] == {"path": "README.md"}
    assert start["parse_error"] is None
