"""Tool calls that are not JSON functions, through `workbench proxy` with the real SDKs: a
freeform tool of the Responses API (`custom_tool_call`, as Codex's `apply_patch`), and
Anthropic's server tools (`server_tool_use` with its `web_search_tool_result`). Each is
kept exactly in the wire body and stream, and shown as a tool call with its result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from agent_core.wire import anthropic as anthropic_wire
from agent_core.wire import responses as responses_wire
from tests.engine.capture_support import assert_no_key_in, read_run
from tests.engine.test_serve_model import serve
from tests.engine.wire_support import ANTHROPIC_KEY, OPENAI_KEY
from workbench.engine.http.model_server import ModelServer, Reply, ScriptResponder
from workbench.engine.http.proxy import RecordingProxy

PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"
APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Apply a patch to the files.",
    "format": {"type": "grammar", "syntax": "lark", "definition": "start: /(.|\\n)+/"},
}


def _response(output: list[dict[str, Any]], number: int) -> dict[str, Any]:
    return {
        "id": f"resp_{number}", "object": "response", "created_at": 0, "status": "completed",
        "model": "gpt-5.5", "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
        "tools": [], "usage": {"input_tokens": 50, "output_tokens": 9, "total_tokens": 59},
    }  # fmt: skip


def _patch_turns(body: dict[str, Any]) -> Reply:
    """Turn 1 calls apply_patch (its input streamed in deltas), turn 2 says it is done."""
    if not any(i.get("type") == "custom_tool_call_output" for i in body["input"]):
        item = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_patch",
                "name": "apply_patch", "input": PATCH, "status": "completed"}  # fmt: skip
        whole = _response([item], 1)
        where = {"item_id": "ctc_1", "output_index": 0}
        events: list[dict[str, Any] | str] = [
            {"type": "response.created",
             "response": {**whole, "status": "in_progress", "output": []}},
            {"type": "response.output_item.added", "output_index": 0,
             "item": {**item, "input": "", "status": "in_progress"}},
            *({"type": "response.custom_tool_call_input.delta", **where, "delta": PATCH[i : i + 20]}
              for i in range(0, len(PATCH), 20)),
            {"type": "response.custom_tool_call_input.done", **where, "input": PATCH},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": whole},
        ]  # fmt: skip
    else:
        parts = [{"type": "output_text", "text": "Patched.", "annotations": []}]
        text = {"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
                "content": parts}  # fmt: skip
        whole = _response([text], 2)
        events = list(responses_wire.stream_events(whole))
    return (
        Reply(chunks=events, api="responses")
        if body.get("stream")
        else Reply(body=whole, api="responses")
    )


def patch_agent(base_url: str, *, stream: bool) -> str:
    client = openai.OpenAI(base_url=base_url, api_key=OPENAI_KEY, max_retries=0)
    conversation: list[Any] = [{"role": "user", "content": "Add hello.txt"}]
    for _ in range(3):
        args: dict[str, Any] = {"model": "gpt-5.5", "input": conversation, "tools": [APPLY_PATCH]}
        if stream:
            with client.responses.create(**args, stream=True) as events:
                done: list[Any] = [e for e in events if e.type == "response.completed"]
            response: Any = done[0].response
        else:
            response = client.responses.create(**args)
        calls = [item for item in response.output if item.type == "custom_tool_call"]
        if not calls:
            return str(response.output_text)
        conversation += [item.model_dump(exclude_none=True) for item in response.output]
        conversation += [
            {
                "type": "custom_tool_call_output",
                "call_id": c.call_id,
                "output": "Done: 1 file added",
            }
            for c in calls
        ]
    raise AssertionError("the agent did not finish")


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_freeform_tool_call_is_a_tool_call_with_its_result(tmp_path: Path, stream: bool) -> None:
    home = tmp_path / "home"
    with (
        ModelServer(ScriptResponder([]), wire_responders={"responses": _patch_turns}) as upstream,
        RecordingProxy(upstream.base_url, home) as proxy,
    ):
        assert patch_agent(proxy.base_url, stream=stream) == "Patched."
        sent = upstream.requests
    events = read_run(home)
    end = events[-1]
    assert (end["status"], end["final_answer"]) == ("completed", "Patched.")
    [started] = [e for e in events if e["type"] == "tool_start"]
    [ended] = [e for e in events if e["type"] == "tool_end"]
    assert (started["name"], started["arguments_raw"], started["call_id"]) == (
        "apply_patch", PATCH, "call_patch",
    )  # fmt: skip
    assert (ended["ok"], ended["observed"], ended["result"]) == (True, True, "Done: 1 file added")
    requests = [e for e in events if e["type"] == "model_request"]
    assert requests[0]["tools"] == [APPLY_PATCH]  # a freeform tool as it was offered
    assert requests[1]["body"] == sent[1].body  # the custom_tool_call item exactly
    [call] = requests[1]["messages"][-2]["tool_calls"]
    assert call == {
        "id": "call_patch",
        "type": "custom",
        "custom": {"name": "apply_patch", "input": PATCH},
    }
    assert_no_key_in(home, OPENAI_KEY)

    with serve("--replay", events[0]["run_id"], "--home", str(home)) as base_url:
        assert patch_agent(base_url, stream=stream) == "Patched."


SEARCH_ANSWER: dict[str, Any] = {
    "id": "msg_search",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "text", "text": "I'll search for that."},
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
         "input": {"query": "PotatoLand capital"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": [
            {"type": "web_search_result", "url": "https://example.org/potatoland",
             "title": "PotatoLand facts", "encrypted_content": "EqgfCioIARgBIiQ3",
             "page_age": None},
        ]},
        {"type": "text", "text": "Its capital is Tuberville."},
    ],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 2000, "output_tokens": 40,
              "server_tool_use": {"web_search_requests": 1}},
}  # fmt: skip


def _search(body: dict[str, Any]) -> Reply:
    if body.get("stream"):
        return Reply(chunks=list(anthropic_wire.stream_events(SEARCH_ANSWER)), api="anthropic")
    return Reply(body=SEARCH_ANSWER, api="anthropic")


def search_agent(base_url: str, *, stream: bool) -> str:
    client = anthropic.Anthropic(base_url=base_url, api_key=ANTHROPIC_KEY, max_retries=0)
    args: dict[str, Any] = {
        "model": "claude-sonnet-4-5", "max_tokens": 1024,
        "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 1}],
        "messages": [{"role": "user", "content": "What is the capital of PotatoLand?"}],
    }  # fmt: skip
    if stream:
        with client.messages.stream(**args) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(**args)
    assert [b.type for b in message.content][1:3] == ["server_tool_use", "web_search_tool_result"]
    return "".join(b.text for b in message.content if b.type == "text")


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_server_tool_is_a_tool_call_of_its_turn(tmp_path: Path, stream: bool) -> None:
    home = tmp_path / "home"
    with (
        ModelServer(ScriptResponder([]), wire_responders={"anthropic": _search}) as upstream,
        RecordingProxy(upstream.base_url, home, anthropic_upstream=upstream.base_url[:-3]) as proxy,
    ):
        answer = search_agent(proxy.base_url[:-3], stream=stream)
    assert answer == "I'll search for that.Its capital is Tuberville."
    events = read_run(home)
    end = events[-1]
    assert (end["status"], end["final_answer"]) == ("completed", answer)
    assert end["totals"]["turns"] == 1 and end["totals"]["tool_calls"] == 1
    [started] = [e for e in events if e["type"] == "tool_start"]
    [ended] = [e for e in events if e["type"] == "tool_end"]
    assert (started["turn"], started["name"], started["source"]) == (1, "web_search", "server")
    assert started["arguments"] == {"query": "PotatoLand capital"}
    assert (ended["ok"], ended["observed"]) == (True, True)
    assert ended["result"] == "PotatoLand facts <https://example.org/potatoland>"
    # The blocks exactly as they came.
    recorded = [e["data"] for e in events if e["type"] == "model_chunk"]
    if stream:
        blocks = [c["content_block"] for c in recorded if c["type"] == "content_block_start"]
        assert blocks[2] == SEARCH_ANSWER["content"][2]
    else:
        assert recorded == [SEARCH_ANSWER]
    assert_no_key_in(home, ANTHROPIC_KEY)

    with serve("--replay", events[0]["run_id"], "--home", str(home)) as base_url:
        assert search_agent(base_url[:-3], stream=stream) == answer
