"""What Claude Code and Codex CLI send, through `workbench proxy`, from the real anthropic
and openai SDKs (the CLIs themselves are the opt-in `coding_agents` tests): Claude Code's
`POST /v1/messages?beta=true` with `<system-reminder>` blocks before the prompt, a
`system`-role message inside `messages` and a `metadata.user_id` new on every run; Codex's
Responses request with developer instructions, an `<environment_context>` message,
`store: false`, a freeform `apply_patch` tool, session ids in `prompt_cache_key` and
`client_metadata`, and `exec_command` output whose `Chunk ID` and `Wall time` change on
every run. Each is captured with its task and tool call, and replays offline through
`serve-model --replay` when it is run again with new session ids."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import anthropic
import openai

from tests.engine.capture_support import read_run
from tests.support.servers import recording_proxy
from workbench.engine.http.model_server import ModelServer, ScriptResponder
from workbench.engine.http.proxy import RecordingProxy
from workbench.engine.http.serve import replay_server

TASK = "What do the notes in notes.txt say?"
ANSWER = "The notes say the release is on Friday."
NOTES = "The release is on Friday."
ANTHROPIC_KEY = "sk-ant-api03-claude-code-shape-0123456789"
OPENAI_KEY = "sk-codex-shape-0123456789abcdef"
STEPS: list[dict[str, Any]] = [
    {
        "content": "I'll read the notes.",
        "tool_calls": [{"id": "call_1", "name": "TOOL", "arguments": {}}],
    },
    {"content": ANSWER},
]


def steps(tool: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    first = {**STEPS[0], "tool_calls": [{"id": "call_1", "name": tool, "arguments": arguments}]}
    return [first, STEPS[1]]


def root(base_url: str) -> str:
    return base_url.removesuffix("/v1")


# --- Claude Code's shape ------------------------------------------------------------------

READ_TOOL = {
    "name": "Read",
    "description": "Reads a file from the local filesystem.",
    "input_schema": {
        "type": "object",
        "properties": {"file_path": {"type": "string"}},
        "required": ["file_path"],
    },
}


def claude_code_shaped(base_url: str) -> str:
    """Two streamed `beta.messages` calls as Claude Code makes them; the final answer."""
    client = anthropic.Anthropic(base_url=base_url, api_key=ANTHROPIC_KEY, max_retries=0)
    session = str(uuid.uuid4())
    messages: list[Any] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<system-reminder>\n# Environment\n</system-reminder>"},
                {"type": "text", "text": "<system-reminder>\nToday is Friday.\n</system-reminder>"},
                {"type": "text", "text": TASK},
            ],
        },
        {"role": "system", "content": "Plan mode is off."},
    ]
    for _ in range(3):
        with client.beta.messages.stream(
            model="claude-sonnet-4-5",
            max_tokens=32000,
            system=[{"type": "text", "text": "You are Claude Code."}],
            messages=messages,
            tools=[READ_TOOL],  # type: ignore[list-item]
            betas=["claude-code-20250219", "interleaved-thinking-2025-05-14"],
            metadata={"user_id": json.dumps({"device_id": "d1", "session_id": session})},
        ) as stream:
            message = stream.get_final_message()
        blocks = [block.model_dump(exclude_none=True) for block in message.content]
        messages.append({"role": "assistant", "content": blocks})
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in message.content if block.type == "text")
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": use.id, "content": f"1\t{NOTES}"}
                    for use in uses
                ],
            }
        )
    raise AssertionError("the model never answered")


def test_a_claude_code_shaped_run_is_captured_and_replays(tmp_path: Path) -> None:
    home = tmp_path / "home"
    script = steps("Read", {"file_path": "/project/notes.txt"})
    with (
        ModelServer(ScriptResponder(script)) as upstream,
        RecordingProxy(upstream.base_url, home, anthropic_upstream=root(upstream.base_url)) as px,
    ):
        assert claude_code_shaped(root(px.base_url)) == ANSWER
    events = read_run(home)
    assert ANTHROPIC_KEY not in json.dumps(events)
    start, end = events[0], events[-1]
    assert (start["task"], end["status"], end["final_answer"]) == (TASK, "completed", ANSWER)
    assert uuid.UUID(start["meta"]["session_id"])  # the client's own session id
    [started] = [e for e in events if e["type"] == "tool_start"]
    [ended] = [e for e in events if e["type"] == "tool_end"]
    assert (started["name"], started["arguments"]) == ("Read", {"file_path": "/project/notes.txt"})
    assert (ended["observed"], ended["result"]) == (True, f"1\t{NOTES}")
    request = next(e for e in events if e["type"] == "model_request")
    assert [m["role"] for m in request["messages"]] == ["system", "user", "system"]

    # Offline, with a new session id in metadata.user_id: the same answer.
    server = replay_server([start["run_id"]], home)
    try:
        assert claude_code_shaped(root(server.base_url)) == ANSWER
    finally:
        server.close()


# --- Codex's shape ------------------------------------------------------------------------

CODEX_TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "exec_command",
        "description": "Runs a command in a PTY.",
        "strict": False,
        "parameters": {
            "type": "object",
            "properties": {"cmd": {"type": "string"}},
            "required": ["cmd"],
            "additionalProperties": False,
        },
    },
    {
        "type": "custom",
        "name": "apply_patch",
        "description": "Use the `apply_patch` tool to edit files.",
        "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "*** Begin Patch"'},
    },
]


def _text(role: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


def codex_shaped(base_url: str) -> str:
    """Streamed Responses calls as Codex makes them (the whole input each time)."""
    client = openai.OpenAI(base_url=base_url, api_key=OPENAI_KEY, max_retries=0)
    session = str(uuid.uuid4())
    items: list[Any] = [
        _text("developer", "You are Codex, a coding agent."),
        _text("user", "<environment_context>\n  <cwd>/project</cwd>\n</environment_context>"),
        _text("user", TASK),
    ]
    for turn in range(3):
        stream = client.responses.create(
            model="gpt-5.5",
            input=items,
            tools=CODEX_TOOLS,
            tool_choice="auto",
            parallel_tool_calls=True,
            store=False,
            include=["reasoning.encrypted_content"],
            prompt_cache_key=session,
            stream=True,
            extra_body={"client_metadata": {"session_id": session, "turn_id": str(turn)}},
        )
        response = next(e.response for e in stream if e.type == "response.completed")
        outputs = [item.model_dump(exclude_none=True) for item in response.output]
        calls = [item for item in outputs if item["type"] == "function_call"]
        if not calls:
            return response.output_text
        items += outputs
        for call in calls:
            # What exec_command answers: a new chunk id and wall time on every run.
            noise = uuid.uuid4()
            header = f"Chunk ID: {noise.hex[:6]}\nWall time: 0.{noise.int % 10_000:04d} seconds"
            output = f"{header}\nProcess exited with code 0\nOutput:\n{NOTES}\n"
            items.append(
                {"type": "function_call_output", "call_id": call["call_id"], "output": output}
            )
    raise AssertionError("the model never answered")


def test_a_codex_shaped_run_is_captured_and_replays(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with recording_proxy(
        ScriptResponder(steps("exec_command", {"cmd": "cat notes.txt"})), home
    ) as (_, proxy):
        assert codex_shaped(proxy.base_url) == ANSWER
    events = read_run(home)
    assert OPENAI_KEY not in json.dumps(events)
    start, end = events[0], events[-1]
    assert (start["task"], end["status"], end["final_answer"]) == (TASK, "completed", ANSWER)
    assert uuid.UUID(start["meta"]["session_id"])  # the client's own session id
    assert start["system_prompt"] == "You are Codex, a coding agent."
    [started] = [e for e in events if e["type"] == "tool_start"]
    [ended] = [e for e in events if e["type"] == "tool_end"]
    assert (started["name"], started["arguments"]) == ("exec_command", {"cmd": "cat notes.txt"})
    assert ended["observed"] and ended["result"].endswith(f"Output:\n{NOTES}\n")
    request = next(e for e in events if e["type"] == "model_request")
    assert (request["body"]["store"], request["api"]) == (False, "responses")
    [patch] = [t for t in start["tools"] if t.get("name") == "apply_patch"]
    assert patch["format"]["syntax"] == "lark"  # the freeform tool kept as sent

    # Offline, with new session ids and a new chunk id and wall time: the same answer.
    server = replay_server([start["run_id"]], home)
    try:
        assert codex_shaped(server.base_url) == ANSWER
    finally:
        server.close()
