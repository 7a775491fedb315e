"""A fork re-sends its parent's history as the client sent it: every tool the parent was
offered, and a run that ends as the parent's client ended it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from agent_core.wire import anthropic as anthropic_wire
from tests.engine.capture_support import API_KEY, TOOLS, read_run
from tests.engine.sdk_requests import check_anthropic_request, check_responses_request
from tests.engine.test_proxy_wire import root
from tests.engine.wire_support import (
    ANTHROPIC_KEY,
    ANTHROPIC_TASK,
    ANTHROPIC_TOOLS,
    SYSTEM,
    RecordedUpstream,
    recorded_events,
    whole_answer,
)
from tests.support.servers import recording_proxy
from workbench.cli import main
from workbench.engine.http.model_server import ModelServer, Reply, ScriptResponder
from workbench.engine.http.proxy import RecordingProxy

# A client that offers more tools than the agent core's default cap of 8 (Claude Code: 12).
MANY_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{n}",
            "description": f"Tool number {n}.",
            "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
        },
    }
    for n in range(12)
]


# The captures' calculator in the Responses shape (its function's fields at the top).
CALCULATOR: list[Any] = [
    {"type": "function", **tool["function"]}
    for tool in TOOLS
    if tool["function"]["name"] == "calculator"
]


def _captured_many_tools_run(home: Path) -> str:
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"id": "call_0", "name": "tool_0", "arguments": {"x": "a"}}]},
        {"content": "Done."},
    ]
    with recording_proxy(ScriptResponder(steps), home) as (_, proxy):
        client = openai.OpenAI(base_url=proxy.base_url, api_key=API_KEY, max_retries=0)
        messages: list[Any] = [{"role": "user", "content": "Use the tools."}]
        first = client.chat.completions.create(model="m", messages=messages, tools=MANY_TOOLS)
        message = first.choices[0].message
        messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
        [call] = message.tool_calls or []
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "ok"})
        client.chat.completions.create(model="m", messages=messages, tools=MANY_TOOLS)
        client.close()
    return str(read_run(home)[0]["run_id"])


@pytest.mark.parametrize("turn", [1, 2])
def test_a_fork_of_a_twelve_tool_capture_offers_all_twelve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], turn: int
) -> None:
    home = tmp_path / "home"
    run_id = _captured_many_tools_run(home)
    with ModelServer(ScriptResponder([{"content": "Forked."}])) as server:
        code = main([
            "fork", run_id, "--turn", str(turn), "--base-url", server.base_url, "--model", "m",
            "--api-key", API_KEY, "--home", str(home), "--no-builtin-tools",
        ])  # fmt: skip
        sent = server.bodies
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "left out" not in printed.out + printed.err
    assert [[t["function"]["name"] for t in body["tools"]] for body in sent] == [
        [t["function"]["name"] for t in MANY_TOOLS]
    ]
    [fork_path] = [p for p in (home / "traces").glob("*.jsonl") if p.stem != run_id]
    start = json.loads(fork_path.read_text().splitlines()[0])
    assert (len(start["tools"]), start["tools_dropped"]) == (12, [])


# --- thinking, redacted thinking, provider-run tools and reasoning items, re-sent as sent ---

THINKING = whole_answer(
    "anthropic", recorded_events("anthropic", "13-thinking-only-then-short-text")
)
REDACTED = whole_answer("anthropic", recorded_events("anthropic", "01-redacted-thinking"))
REASONING = whole_answer(
    "responses", recorded_events("responses", "12-reasoning-then-function-call-usage-at-end")
)
SEARCH_ID = "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE"


def _thinking_then_weather(call_id: str) -> dict[str, Any]:
    """An answer that thinks (signed and redacted), searches the web on the provider's side
    and then asks the client's weather tool."""
    blocks = [
        THINKING["content"][0],
        REDACTED["content"][0],
        {
            "type": "server_tool_use",
            "id": SEARCH_ID,
            "name": "web_search",
            "input": {"query": "San Francisco weather"},
        },
        {
            "type": "web_search_tool_result",
            "tool_use_id": SEARCH_ID,
            "content": [
                {
                    "type": "web_search_result",
                    "title": "San Francisco weather",
                    "url": "https://weather.example/sf",
                    "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5",
                    "page_age": None,
                }
            ],
        },
        {
            "type": "tool_use",
            "id": call_id,
            "name": "weather",
            "input": {"location": "San Francisco"},
        },
    ]
    return {**THINKING, "id": f"msg_{call_id}", "content": blocks, "stop_reason": "tool_use"}


class AnthropicUpstream:
    """Answers each request with the next of `answers` (a whole message), streamed."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        return Reply(chunks=list(anthropic_wire.stream_events(answer)), api="anthropic")


# A system prompt as Claude Code sends it: text blocks, the last one marked for caching.
SYSTEM_BLOCKS: list[Any] = [
    {"type": "text", "text": "You are a coding agent."},
    {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}},
]


def _captured_thinking_run(home: Path, system: Any = SYSTEM) -> tuple[str, list[Any]]:
    """A thinking anthropic-SDK agent's run through the proxy, and the bodies it sent."""
    answers = [_thinking_then_weather("toolu_recorded"), THINKING]
    with (
        ModelServer(ScriptResponder([]), wire_responders={"anthropic": AnthropicUpstream(answers)})
        as upstream,
        RecordingProxy(upstream.base_url, home, anthropic_upstream=root(upstream.base_url))
        as proxy,
    ):  # fmt: skip
        client = anthropic.Anthropic(
            base_url=root(proxy.base_url), api_key=ANTHROPIC_KEY, max_retries=0
        )
        messages: list[Any] = [{"role": "user", "content": ANTHROPIC_TASK}]
        for _ in range(3):
            with client.messages.stream(
                model="claude-sonnet-4-5", max_tokens=2048, system=system, tools=ANTHROPIC_TOOLS,
                thinking={"type": "enabled", "budget_tokens": 1024}, messages=messages,
            ) as events:  # fmt: skip
                message = events.get_final_message()
            messages.append(
                {
                    "role": "assistant",
                    "content": [b.model_dump(exclude_none=True) for b in message.content],
                }
            )
            calls = [block for block in message.content if block.type == "tool_use"]
            if not calls:
                break
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": c.id, "content": "58 F"}
                        for c in calls
                    ],
                }
            )
        client.close()
        sent = [request.body for request in upstream.requests]
    return str(read_run(home)[0]["run_id"]), sent


@pytest.mark.parametrize("system", [SYSTEM, SYSTEM_BLOCKS], ids=["text", "blocks"])
def test_a_fork_of_a_thinking_anthropic_capture_resends_its_blocks_as_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], system: Any
) -> None:
    home = tmp_path / "home"
    run_id, captured = _captured_thinking_run(home, system)
    assert captured[1]["system"] == system
    assert [m["role"] for m in captured[1]["messages"]] == ["user", "assistant", "user"]
    # The fork asks again at turn 2 with the weather mocked; its model thinks and asks the
    # same weather again (the recorded result answers), then answers.
    fork_upstream = AnthropicUpstream([_thinking_then_weather("toolu_fork"), THINKING])
    with ModelServer(ScriptResponder([]), wire_responders={"anthropic": fork_upstream}) as server:
        code = main([
            "fork", run_id, "--turn", "2", "--mock", "toolu_recorded=61 F and foggy",
            "--base-url", root(server.base_url), "--model", "claude-sonnet-4-5",
            "--api-key", ANTHROPIC_KEY, "--home", str(home), "--no-builtin-tools",
        ])  # fmt: skip
        sent = [request.body for request in server.requests]
    printed = capsys.readouterr()
    assert code == 0, printed.out + printed.err
    assert len(sent) == 2
    for body in sent:
        check_anthropic_request(body)
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    # Turn 2: the parent's history as its client sent it, only the mocked result changed.
    expected = json.loads(json.dumps(captured[1]["messages"]))
    expected[2]["content"][0]["content"] = "61 F and foggy"
    assert json.dumps(sent[0]["messages"]) == json.dumps(expected)
    assert sent[0]["system"] == captured[1]["system"]
    assert sent[0]["tools"] == captured[1]["tools"]
    # Turn 3: and the fork's own answer with its thinking, as the model gave it.
    assert sent[1]["messages"][:3] == sent[0]["messages"]
    assert sent[1]["messages"][3] == {
        "role": "assistant",
        "content": _thinking_then_weather("toolu_fork")["content"],
    }


def test_a_fork_of_a_responses_capture_resends_its_reasoning_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    turns = ["12-reasoning-then-function-call-usage-at-end", "10-text-then-function-call"]
    with (
        ModelServer(
            ScriptResponder([]), wire_responders={"responses": RecordedUpstream("responses", turns)}
        ) as upstream,
        RecordingProxy(upstream.base_url, home) as proxy,
    ):
        client = openai.OpenAI(base_url=proxy.base_url, api_key=API_KEY, max_retries=0)
        conversation: list[Any] = [{"role": "user", "content": "What is 12 + 7, times 30?"}]
        args: dict[str, Any] = {
            "model": "gpt-5", "instructions": SYSTEM, "tools": CALCULATOR, "store": False,
            "include": ["reasoning.encrypted_content"],
        }  # fmt: skip
        first = client.responses.create(**args, input=conversation)
        conversation += [item.model_dump(exclude_none=True) for item in first.output]
        [call] = [item for item in first.output if item.type == "function_call"]
        conversation.append(
            {"type": "function_call_output", "call_id": call.call_id, "output": "19"}
        )
        client.responses.create(**args, input=conversation)
        client.close()
        captured = [request.body for request in upstream.requests]
    run_id = str(read_run(home)[0]["run_id"])
    assert any(item.get("encrypted_content") for item in captured[1]["input"])

    fork_upstream = RecordedUpstream(
        "responses", ["14-openrouter-comment-reasoning-text-done-sentinel"]
    )
    with ModelServer(ScriptResponder([]), wire_responders={"responses": fork_upstream}) as server:
        code = main([
            "fork", run_id, "--turn", "2", "--mock", f"{call.call_id}=20",
            "--base-url", server.base_url, "--model", "gpt-5", "--api-key", API_KEY,
            "--home", str(home), "--no-builtin-tools",
        ])  # fmt: skip
        [sent] = [request.body for request in server.requests]
    printed = capsys.readouterr()
    assert code == 0, printed.out + printed.err
    check_responses_request(sent)
    expected = json.loads(json.dumps(captured[1]["input"]))
    expected[-1]["output"] = "20"
    assert json.dumps(sent["input"]) == json.dumps(expected)
    assert (sent["store"], sent["include"]) == (False, ["reasoning.encrypted_content"])
