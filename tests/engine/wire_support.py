"""Agents on the real openai SDK (Responses API) and the real anthropic SDK, as users of
`workbench proxy` have, and a local upstream that answers them with recorded streams.

Each agent asks the model, runs the tool calls it gets back itself, sends the results
(`function_call_output` items; `tool_result` blocks) and stops at the first answer without
tool calls. The upstream answers request N with recorded stream N (tests/fixtures/
streams-responses, streams-anthropic): the events as recorded when the request streams, the
whole answer they make (the response `response.completed` carries; the message assembled)
when it does not.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anthropic
import openai

from agent_core.wire.anthropic import AnthropicAssembler
from traces.events import ModelApi
from workbench.engine.http.model_server import Reply

FIXTURES = Path(__file__).parents[1] / "fixtures"
SYSTEM = "You are a careful agent."
OPENAI_KEY = "sk-responses-test-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-api03-test-0123456789abcdefghij"

# The Responses agent: the recorded model looks up a capital, then answers "4".
RESPONSES_TURNS = [
    "10-text-then-function-call",
    "14-openrouter-comment-reasoning-text-done-sentinel",
]
RESPONSES_TASK = "What is the capital of PotatoLand?"
RESPONSES_TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "get_capital",
        "description": "The capital of a country.",
        "parameters": {
            "type": "object",
            "properties": {"country": {"type": "string"}},
            "required": ["country"],
            "additionalProperties": False,
        },
        "strict": True,
    }
]
# The Anthropic agent: the recorded model asks for the weather, then thinks and answers.
ANTHROPIC_TURNS = ["09-many-pings-tool-only", "13-thinking-only-then-short-text"]
ANTHROPIC_TASK = "What is the weather in San Francisco?"
ANTHROPIC_TOOLS: list[Any] = [
    {
        "name": "weather",
        "description": "The weather at a location.",
        "input_schema": {
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        },
    }
]
TOOL_RESULTS = {"get_capital": "Tuberville", "weather": "58 F and sunny"}


def recorded_events(api: ModelApi, name: str) -> list[dict[str, Any] | str]:
    """A recorded stream's events after its header; raw SSE lines as strings."""
    folder = FIXTURES / ("streams-responses" if api == "responses" else "streams-anthropic")
    lines = (folder / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    events: list[dict[str, Any] | str] = []
    for line in lines:
        data = json.loads(line)
        raw = data.get("_sse_raw")
        if raw is None:
            events.append(data)
        else:  # a comment as it was; a bare sentinel was a data line
            events.append(raw if raw.startswith((":", "data", "event")) else f"data: {raw}")
    return events


def whole_answer(api: ModelApi, events: list[dict[str, Any] | str]) -> dict[str, Any]:
    """The whole answer a recorded stream makes, as a non-streamed call returns it."""
    payloads = [event for event in events if isinstance(event, dict)]
    if api == "responses":
        return next(e["response"] for e in payloads if e.get("type") == "response.completed")
    assembler = AnthropicAssembler()
    for event in payloads:
        assembler.add(event)
    return assembler.result().body


class RecordedUpstream:
    """Answers request N of `api` with recorded stream N (the last one repeats)."""

    def __init__(self, api: ModelApi, names: list[str]) -> None:
        self.api = api
        self.streams = [recorded_events(api, name) for name in names]
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            events = self.streams[min(self.calls, len(self.streams) - 1)]
            self.calls += 1
        if body.get("stream"):
            return Reply(chunks=list(events), api=self.api)
        return Reply(body=whole_answer(self.api, events), api=self.api)


def run_tool(name: str, arguments: Any) -> str:
    args = json.loads(arguments) if isinstance(arguments, str) else arguments
    assert isinstance(args, dict) and args, f"{name} called without arguments"
    return TOOL_RESULTS[name]


def run_responses_agent(base_url: str, *, stream: bool, chain: bool = False) -> str:
    """The agent's final answer. With `chain`, each follow-up sends only the tool results
    and the id of the answer they follow (`previous_response_id`), else the whole input."""
    client = openai.OpenAI(base_url=base_url, api_key=OPENAI_KEY, max_retries=0)
    conversation: list[Any] = [{"role": "user", "content": RESPONSES_TASK}]
    sending, previous = conversation, None
    for _ in range(5):
        extra: dict[str, Any] = {"previous_response_id": previous} if previous else {}
        args: dict[str, Any] = {
            "model": "gpt-5.5", "instructions": SYSTEM, "tools": RESPONSES_TOOLS, "input": sending,
        }  # fmt: skip
        if stream:
            response = None
            with client.responses.create(**args, **extra, stream=True) as events:
                for event in events:
                    if event.type == "response.completed":
                        response = event.response
            assert response is not None, "the stream had no response.completed"
        else:
            response = client.responses.create(**args, **extra)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            client.close()
            return str(response.output_text)
        results = [
            {
                "type": "function_call_output",
                "call_id": c.call_id,
                "output": run_tool(c.name, c.arguments),
            }
            for c in calls
        ]
        conversation += [item.model_dump(exclude_none=True) for item in response.output] + results
        sending, previous = (results, response.id) if chain else (conversation, None)
    raise AssertionError("the agent did not finish")


def run_anthropic_agent(base_url: str, *, stream: bool, x_api_key: bool = False) -> str:
    """The agent's final answer; `base_url` is the endpoint's root (no /v1). The SDK sends
    its key as `Authorization: Bearer`; with `x_api_key` it goes as `x-api-key` too, as
    Anthropic's own API and Claude Code have it."""
    headers = {"x-api-key": ANTHROPIC_KEY} if x_api_key else None
    client = anthropic.Anthropic(
        base_url=base_url, api_key=ANTHROPIC_KEY, max_retries=0, default_headers=headers
    )
    messages: list[Any] = [{"role": "user", "content": ANTHROPIC_TASK}]
    for _ in range(5):
        args: dict[str, Any] = {
            "model": "claude-haiku-4-5", "max_tokens": 1024, "system": SYSTEM,
            "tools": ANTHROPIC_TOOLS, "messages": messages,
        }  # fmt: skip
        if stream:
            with client.messages.stream(**args) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**args)
        messages.append(
            {
                "role": "assistant",
                "content": [b.model_dump(exclude_none=True) for b in message.content],
            }
        )
        calls = [block for block in message.content if block.type == "tool_use"]
        if not calls:
            client.close()
            return "".join(block.text for block in message.content if block.type == "text")
        results = [
            {"type": "tool_result", "tool_use_id": c.id, "content": run_tool(c.name, c.input)}
            for c in calls
        ]
        messages.append({"role": "user", "content": results})
    raise AssertionError("the agent did not finish")
