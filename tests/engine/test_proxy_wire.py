"""The Responses API and Anthropic Messages through `workbench proxy`, with the real openai
and anthropic SDKs, upstreams answering with recorded streams: each run is recorded with
its tool call and result, no key reaches a trace, and `workbench serve-model --replay`
answers the same client offline with the same final answer."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tests.engine.capture_support import assert_no_key_in, read_run
from tests.engine.test_serve_model import serve
from tests.engine.wire_support import (
    ANTHROPIC_KEY,
    ANTHROPIC_TASK,
    ANTHROPIC_TURNS,
    OPENAI_KEY,
    RESPONSES_TASK,
    RESPONSES_TURNS,
    SYSTEM,
    RecordedUpstream,
    run_anthropic_agent,
    run_responses_agent,
)
from tests.support.processes import WORKBENCH
from workbench.engine.http.model_server import ModelServer, Reply, ScriptResponder
from workbench.engine.http.proxy import RecordingProxy


def workbench_json(home: Path, *argv: str) -> Any:
    done = subprocess.run(
        [WORKBENCH, "--home", str(home), *argv, "--json"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def root(base_url: str) -> str:
    return base_url.removesuffix("/v1")


def check_captured_run(
    home: Path, api: str, task: str, call: tuple[str, dict[str, Any], str], answer: str, key: str
) -> dict[str, Any]:
    """The one run under `home`: completed, two turns of `api`, the tool call and its result
    observed; its run_start."""
    events = read_run(home)
    assert key not in json.dumps(events)
    start, end = events[0], events[-1]
    assert (start["origin"], start["task"], start["schema_version"]) == ("captured", task, 3)
    assert (end["status"], end["final_answer"]) == ("completed", answer)
    requests = [e for e in events if e["type"] == "model_request"]
    assert [(r["turn"], r["api"]) for r in requests] == [(1, api), (2, api)]
    assert all(
        r["body"] is not None and r["messages"][-1]["role"] in ("user", "tool") for r in requests
    )
    [started] = [e for e in events if e["type"] == "tool_start"]
    [ended] = [e for e in events if e["type"] == "tool_end"]
    name, arguments, result = call
    assert (started["turn"], started["name"], started["arguments"]) == (1, name, arguments)
    assert (ended["ok"], ended["observed"], ended["result"]) == (True, True, result)
    assert ended["call_id"] == started["call_id"]
    # The read commands show it like any run.
    [listed] = workbench_json(home, "runs")
    assert (listed["run_id"], listed["status"]) == (start["run_id"], "completed")
    shown = workbench_json(home, "show", start["run_id"])
    assert json.dumps(shown).count(result) >= 1 and key not in json.dumps(shown)
    assert_no_key_in(home, key)  # the trace, the store, anything the reads left
    return start


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("chain", [False, True], ids=["whole-input", "previous_response_id"])
def test_an_openai_responses_agent_is_recorded_and_replays_offline(
    tmp_path: Path, stream: bool, chain: bool
) -> None:
    home = tmp_path / "home"
    upstream_answers = RecordedUpstream("responses", RESPONSES_TURNS)
    with (
        ModelServer(
            ScriptResponder([]), wire_responders={"responses": upstream_answers}
        ) as upstream,
        RecordingProxy(upstream.base_url, home) as proxy,
    ):
        answer = run_responses_agent(proxy.base_url, stream=stream, chain=chain)
        sent = upstream.requests
    assert answer == "4"
    assert all(r.headers["authorization"] == f"Bearer {OPENAI_KEY}" for r in sent)
    assert ("previous_response_id" in sent[1].body) is chain
    start = check_captured_run(
        home, "responses", RESPONSES_TASK,
        ("get_capital", {"country": "PotatoLand"}, "Tuberville"), "4", OPENAI_KEY,
    )  # fmt: skip
    assert start["tools"][0]["function"]["name"] == "get_capital"
    events = read_run(home)
    requests = [e for e in events if e["type"] == "model_request"]
    assert requests[1]["body"] == sent[1].body  # the wire body exactly
    if stream:  # the stream's events as they came, reasoning items and all
        chunks = [e["data"] for e in events if e["type"] == "model_chunk" and e["turn"] == 1]
        assert (
            chunks[0]["type"] == "response.created" and chunks[-1]["type"] == "response.completed"
        )
        assert any(item["type"] == "reasoning" for item in chunks[-1]["response"]["output"])

    with serve("--replay", start["run_id"], "--home", str(home)) as base_url:
        assert run_responses_agent(base_url, stream=stream, chain=chain) == answer


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_an_anthropic_agent_is_recorded_and_replays_offline(tmp_path: Path, stream: bool) -> None:
    home = tmp_path / "home"
    with (
        ModelServer(
            ScriptResponder([]),
            wire_responders={"anthropic": RecordedUpstream("anthropic", ANTHROPIC_TURNS)},
        ) as upstream,
        RecordingProxy(
            "http://127.0.0.1:9/v1", home, anthropic_upstream=root(upstream.base_url)
        ) as proxy,
    ):
        answer = run_anthropic_agent(root(proxy.base_url), stream=stream, x_api_key=stream)
        sent = upstream.requests
    assert answer == "925 ÷ 5 = 185"
    assert [r.path for r in sent] == ["/v1/messages", "/v1/messages"]
    assert all(r.headers["authorization"] == f"Bearer {ANTHROPIC_KEY}" for r in sent)
    assert all(r.headers.get("x-api-key") == (ANTHROPIC_KEY if stream else None) for r in sent)
    assert all(r.headers["anthropic-version"] for r in sent)
    start = check_captured_run(
        home, "anthropic", ANTHROPIC_TASK,
        ("weather", {"location": "San Francisco"}, "58 F and sunny"), answer, ANTHROPIC_KEY,
    )  # fmt: skip
    assert start["base_url"] == root(upstream.base_url)
    events = read_run(home)
    [_, last] = [e for e in events if e["type"] == "model_response"]
    assert last["message"]["reasoning_content"].startswith("The previous result was 925")
    assert last["finish_reason"] == "stop"

    with serve("--replay", start["run_id"], "--home", str(home)) as base_url:
        assert run_anthropic_agent(root(base_url), stream=stream) == answer


def test_count_tokens_passes_through_unrecorded(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with (
        ModelServer(ScriptResponder([])) as upstream,
        RecordingProxy(
            upstream.base_url, home, anthropic_upstream=root(upstream.base_url)
        ) as proxy,
    ):
        client = anthropic.Anthropic(
            base_url=root(proxy.base_url), api_key=ANTHROPIC_KEY, max_retries=0
        )
        with pytest.raises(anthropic.NotFoundError) as refused:
            client.messages.count_tokens(
                model="claude-haiku-4-5", messages=[{"role": "user", "content": "hi"}]
            )
    # The upstream's own answer (it has no such route, and says so as Anthropic would), relayed.
    assert refused.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    assert "no route POST /v1/messages/count_tokens" in str(refused.value)
    assert not (home / "traces").exists() or not list((home / "traces").iterdir())


def test_serve_model_answers_every_format_from_a_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "Hello from the script."}] * 4))
    with serve("--script", str(script)) as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)
        whole = client.responses.create(model="m", input="hi")
        with client.responses.create(model="m", input="hi", stream=True) as events:
            done = [e.response for e in events if e.type == "response.completed"]
        claude = anthropic.Anthropic(base_url=root(base_url), api_key="k", max_retries=0)
        message = claude.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        with pytest.raises(anthropic.APIStatusError) as exhausted:
            with claude.messages.stream(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
            ) as stream:
                streamed = stream.get_final_text()
            assert streamed == "Hello from the script."
            claude.messages.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
            )
    assert whole.output_text == done[0].output_text == "Hello from the script."
    assert message.content[0].type == "text" and message.content[0].text == "Hello from the script."
    # Anthropic's clients read an error in Anthropic's shape.
    assert exhausted.value.status_code == 410
    assert exhausted.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]


def test_an_error_event_mid_stream_is_the_turns_error(tmp_path: Path) -> None:
    """A recorded Responses stream that fails (`error`, then `response.failed`) and an
    Anthropic stream with redacted thinking: the failure is recorded as the model's error,
    the redacted block kept among the recorded events."""
    home = tmp_path / "home"
    wire = {
        "responses": RecordedUpstream("responses", ["01-error-mid-stream-insufficient-quota"]),
        "anthropic": RecordedUpstream("anthropic", ["01-redacted-thinking"]),
    }
    with (
        ModelServer(ScriptResponder([]), wire_responders=wire) as upstream,  # type: ignore[arg-type]
        RecordingProxy(
            upstream.base_url, home, anthropic_upstream=root(upstream.base_url)
        ) as proxy,
    ):
        client = openai.OpenAI(base_url=proxy.base_url, api_key=OPENAI_KEY, max_retries=0)
        kinds: list[str] = []
        with (
            pytest.raises(openai.APIError, match="exceeded your current quota"),
            client.responses.create(model="gpt-5", input="hi", stream=True) as events,
        ):
            for event in events:  # the SDK raises at the error event
                kinds.append(event.type)
        claude = anthropic.Anthropic(base_url=root(proxy.base_url), api_key=ANTHROPIC_KEY)
        with claude.messages.stream(
            model="claude-3-7-sonnet", max_tokens=64, messages=[{"role": "user", "content": "x"}]
        ) as stream:
            message = stream.get_final_message()
    assert kinds == ["response.created", "response.in_progress"]
    assert message.content[0].type == "redacted_thinking"
    by_api: dict[str, list[dict[str, Any]]] = {}
    for path in (home / "traces").glob("*.jsonl"):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        api = next(e["api"] for e in lines if e["type"] == "model_request")
        by_api[api] = lines
    failed = by_api["responses"]
    [error] = [e for e in failed if e["type"] == "error"]
    assert (error["where"], error["kind"]) == ("model", "stream_error")
    assert error["message"].startswith("You exceeded your current quota")
    assert failed[-1]["status"] == "cancelled"  # waiting for a retry when the proxy stopped
    answered = by_api["anthropic"]
    chunks = [e["data"] for e in answered if e["type"] == "model_chunk"]
    assert chunks[1]["content_block"]["type"] == "redacted_thinking"
    assert answered[-1]["status"] == "completed"


def test_an_anthropic_error_reaches_the_client_unchanged_and_is_recorded(tmp_path: Path) -> None:
    home = tmp_path / "home"
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    reply = Reply(status=529, body=overloaded, api="anthropic", headers={"x-should-retry": "false"})
    with (
        ModelServer(
            ScriptResponder([]), wire_responders={"anthropic": lambda body: reply}
        ) as upstream,
        RecordingProxy(
            upstream.base_url, home, anthropic_upstream=root(upstream.base_url)
        ) as proxy,
    ):
        claude = anthropic.Anthropic(
            base_url=root(proxy.base_url), api_key=ANTHROPIC_KEY, max_retries=0
        )
        with pytest.raises(anthropic.APIStatusError) as failed:
            claude.messages.create(
                model="claude-haiku-4-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
            )
    assert failed.value.status_code == 529 and failed.value.body == overloaded
    events = read_run(home)
    [error] = [e for e in events if e["type"] == "error"]
    assert (error["status_code"], error["message"], error["retriable"]) == (
        529, "HTTP 529: Overloaded", True,
    )  # fmt: skip


def test_a_chained_responses_run_forks_with_its_whole_context(tmp_path: Path) -> None:
    """A client that sends only the tool results after `previous_response_id`: turn 2 is
    recorded with the whole conversation, and a fork at turn 2 sends it whole, in the run's
    own format, with the mocked result, to a model that never saw the earlier answer."""
    home = tmp_path / "home"
    with (
        ModelServer(
            ScriptResponder([]),
            wire_responders={"responses": RecordedUpstream("responses", RESPONSES_TURNS)},
        ) as upstream,
        RecordingProxy(upstream.base_url, home) as proxy,
    ):
        assert run_responses_agent(proxy.base_url, stream=False, chain=True) == "4"
    events = read_run(home)
    run_id = events[0]["run_id"]
    first, second = [e for e in events if e["type"] == "model_request"]
    assert [item["type"] for item in second["body"]["input"]] == ["function_call_output"]
    assert second["messages"][:2] == first["messages"]  # the instructions and the task
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    [call] = second["messages"][2]["tool_calls"]
    assert second["messages"][3]["tool_call_id"] == call["id"]

    answer = [{"content": "Then it is Spudburg."}]
    with ModelServer(ScriptResponder(answer)) as model:
        forked = subprocess.run(
            [
                WORKBENCH, "--home", str(home), "fork", run_id, "--turn", "2",
                "--mock", f"{call['id']}=Spudburg", "--base-url", model.base_url,
                "--model", "gpt-5.5", "--api-key", OPENAI_KEY, "--no-builtin-tools",
            ],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        sent = model.requests
    assert forked.returncode == 0, forked.stdout + forked.stderr
    [request] = sent
    assert request.path == "/v1/responses"  # the run's own format, not chat completions
    assert "previous_response_id" not in request.body
    assert request.body["instructions"] == SYSTEM
    items = request.body["input"]
    assert items[0] == {"role": "user", "content": RESPONSES_TASK}
    assert [i.get("type") for i in items[-2:]] == ["function_call", "function_call_output"]
    assert items[-1] == {
        "type": "function_call_output",
        "call_id": call["id"],
        "output": "Spudburg",
    }
    [fork] = [p for p in (home / "traces").glob("*.jsonl") if p.stem != run_id]
    fork_end = json.loads(fork.read_text().splitlines()[-1])
    assert (fork_end["status"], fork_end["final_answer"]) == ("completed", "Then it is Spudburg.")


def codex_style_agent(base_url: str) -> str:
    """As Codex sends: `store: false`, the reasoning items back with their encrypted
    content (`include: ["reasoning.encrypted_content"]`), streamed, the whole input each time."""
    client = openai.OpenAI(base_url=base_url, api_key=OPENAI_KEY, max_retries=0)
    calculator = {
        "type": "function", "name": "calculator", "description": "Arithmetic.",
        "parameters": {"type": "object", "properties": {
            "a": {"type": "number"}, "b": {"type": "number"}, "op": {"type": "string"}}},
    }  # fmt: skip
    conversation: list[Any] = [{"role": "user", "content": "What is 12 + 7?"}]
    for _ in range(3):
        args: dict[str, Any] = {
            "model": "gpt-5.5", "instructions": SYSTEM, "input": conversation,
            "tools": [calculator], "store": False, "include": ["reasoning.encrypted_content"],
        }  # fmt: skip
        with client.responses.create(**args, stream=True) as events:
            done: list[Any] = [e for e in events if e.type == "response.completed"]
        response = done[0].response
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            client.close()
            return str(response.output_text)
        conversation += [item.model_dump(exclude_none=True) for item in response.output]
        for c in calls:
            args = json.loads(c.arguments)
            conversation.append(
                {
                    "type": "function_call_output",
                    "call_id": c.call_id,
                    "output": str(args["a"] + args["b"]),
                }
            )
    raise AssertionError("the agent did not finish")


def test_store_false_with_encrypted_reasoning_is_one_run_and_keeps_the_reasoning(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    turns = ["02-reasoning-summary-then-function-call", RESPONSES_TURNS[1]]
    with (
        ModelServer(
            ScriptResponder([]), wire_responders={"responses": RecordedUpstream("responses", turns)}
        ) as upstream,
        RecordingProxy(upstream.base_url, home) as proxy,
    ):
        assert codex_style_agent(proxy.base_url) == "4"
        sent = upstream.requests
    events = read_run(home)
    assert events[-1]["status"] == "completed"
    first, second = [e for e in events if e["type"] == "model_request"]
    assert first["params"]["store"] is False
    assert first["params"]["include"] == ["reasoning.encrypted_content"]
    # The reasoning item went back with its encrypted content, and the trace has it exactly.
    [reasoning] = [i for i in second["body"]["input"] if i.get("type") == "reasoning"]
    assert reasoning["encrypted_content"].startswith("gAAAAABpPDIV")
    assert second["body"] == sent[1].body
    answered = [e for e in events if e["type"] == "model_response"]
    assert answered[0]["message"]["reasoning_content"]  # its summary, readable
    [ended] = [e for e in events if e["type"] == "tool_end"]
    assert (ended["ok"], ended["observed"], ended["result"]) == (True, True, "19")
    last = [e["data"] for e in events if e["type"] == "model_chunk" and e["turn"] == 1][-1]
    assert last["response"]["output"][0]["encrypted_content"] == reasoning["encrypted_content"]

    with serve("--replay", events[0]["run_id"], "--home", str(home)) as base_url:
        assert codex_style_agent(base_url) == "4"


def test_an_older_chained_capture_forks_with_its_whole_context(tmp_path: Path) -> None:
    """The v3 golden Responses run recorded turn 2 as sent (the tool result after
    `previous_response_id`, no history): a fork at turn 2 rebuilds the history from turn 1."""
    golden = Path(__file__).parents[1] / "fixtures" / "traces" / "v3"
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    [path] = [p for p in golden.glob("*.jsonl") if '"api":"responses"' in p.read_text()]
    (home / "traces" / path.name).write_bytes(path.read_bytes())
    events = read_run(home)
    recorded = [e for e in events if e["type"] == "model_request"][1]
    assert [m["role"] for m in recorded["messages"]] == ["system", "tool"]
    call_id = recorded["messages"][1]["tool_call_id"]
    script = tmp_path / "fork.json"
    script.write_text(json.dumps([{"content": "Spudburg, then."}]))
    forked = subprocess.run(
        [
            WORKBENCH, "--home", str(home), "fork", path.stem, "--turn", "2",
            "--mock", f"{call_id}=Spudburg", "--script", str(script), "--no-builtin-tools",
        ],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert forked.returncode == 0, forked.stdout + forked.stderr
    [fork] = [p for p in (home / "traces").glob("*.jsonl") if p.stem != path.stem]
    fork_events = [json.loads(line) for line in fork.read_text().splitlines()]
    [request] = [e for e in fork_events if e["type"] == "model_request"]
    assert [m["role"] for m in request["messages"]] == ["system", "user", "assistant", "tool"]
    assert request["messages"][1]["content"] == RESPONSES_TASK
    assert request["messages"][2]["tool_calls"][0]["id"] == call_id
    assert request["messages"][3] == {
        "role": "tool",
        "tool_call_id": call_id,
        "content": "Spudburg",
    }
