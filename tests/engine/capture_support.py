"""A small hand-written agent on the official openai SDK, as a user of `workbench proxy` has.

It asks the model, runs the tool calls it gets back itself (read_file and calculator on
fixed data), sends the results, and stops at the first answer without tool calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
from openai.types.chat import ChatCompletionMessage

from traces.events import RunStart

SYSTEM = "You are a careful agent."
TASK = "What does config.toml say about the port, times two?"
FILES = {"config.toml": 'name = "demo"\nport = 8080\n'}
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluate arithmetic.",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    },
]
# What the upstream model answers: two tool calls at once, then the answer.
STEPS: list[dict[str, Any]] = [
    {
        "content": "Reading the config.",
        "tool_calls": [
            {"id": "call_read", "name": "read_file", "arguments": {"path": "config.toml"}},
            {"id": "call_calc", "name": "calculator", "arguments": {"expression": "8080 * 2"}},
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    },
    {"content": "The port is 8080; twice that is 16160."},
]
API_KEY = "sk-proxy-test-0123456789abcdef"


def run_tool(name: str, arguments: str) -> str:
    args = json.loads(arguments)
    if name == "read_file":
        return FILES.get(args["path"], "no such file")
    left, _, right = args["expression"].partition("*")
    return str(int(left) * int(right))


def run_agent(base_url: str, *, stream: bool, headers: dict[str, str] | None = None) -> str:
    """The agent's final answer."""
    client = openai.OpenAI(
        base_url=base_url, api_key=API_KEY, max_retries=0, default_headers=headers
    )
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    for _ in range(5):
        if stream:
            with client.chat.completions.stream(
                model="demo-model", messages=messages, tools=TOOLS
            ) as events:
                message: ChatCompletionMessage = events.get_final_completion().choices[0].message
        else:
            answer = client.chat.completions.create(
                model="demo-model", messages=messages, tools=TOOLS
            )
            message = answer.choices[0].message
        messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
        calls = message.tool_calls or []
        if not calls:
            client.close()
            return message.content or ""
        for call in calls:
            result = run_tool(call.function.name, call.function.arguments)  # type: ignore[union-attr]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AssertionError("the agent did not finish")


def read_run(home: Path, run_id: str | None = None) -> list[dict[str, Any]]:
    """The events of the one run (or the named run) recorded under `home`."""
    files = sorted((home / "traces").glob("*.jsonl"))
    if run_id is not None:
        files = [f for f in files if f.stem == run_id]
    assert len(files) == 1, files
    return [json.loads(line) for line in files[0].read_text().splitlines()]


def assert_no_key_in(home: Path, key: str) -> None:
    """No file under `home` (traces, the store, anything) holds `key`."""
    needle = key.encode()
    holding = [p for p in home.rglob("*") if p.is_file() and needle in p.read_bytes()]
    assert not holding, f"the client's key is in {holding}"


def runs(home: Path) -> list[list[dict[str, Any]]]:
    """Every run recorded under `home`, oldest first."""
    found = [
        [json.loads(line) for line in path.read_text().splitlines()]
        for path in (home / "traces").glob("*.jsonl")
    ]
    return sorted(found, key=lambda events: RunStart.model_validate(events[0]).ts)
