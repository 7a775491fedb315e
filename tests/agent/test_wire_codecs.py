"""The Responses and Anthropic codecs on recorded streams (tests/fixtures/streams-responses,
streams-anthropic): each stream assembles into the chat-shape answer it says, whole answers
read the same as their streams, and what the encoders write reads back the same."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_core.wire import anthropic, responses
from agent_core.wire.answer import WireAnswer, WireError
from agent_core.wire.codecs import codec_for, holds_last_event
from tests.engine.wire_support import recorded_events, whole_answer
from traces.events import ModelApi


def assembled(api: ModelApi, name: str) -> WireAnswer:
    assembler = (
        responses.ResponsesAssembler() if api == "responses" else anthropic.AnthropicAssembler()
    )
    for event in recorded_events(api, name):
        if isinstance(event, dict):
            assembler.add(event)
    assert assembler.done
    return assembler.result()


def calls(answer: WireAnswer) -> list[tuple[str, str, Any]]:
    """Each tool call's id, name and arguments as the JSON value they spell ("" is {})."""
    return [
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        for c in answer.message.get("tool_calls", [])
    ]


@pytest.mark.parametrize(
    ("api", "name", "finish", "tool_calls", "text"),
    [
        ("responses", "10-text-then-function-call", "tool_calls",
         [("call_LabG58Uhrq9kZvR52BYKjToD", "get_capital", {"country": "PotatoLand"})],
         "I\u2019ll check the capital"),
        ("responses", "04-function-call-args-many-deltas", "tool_calls", None, None),
        ("responses", "02-reasoning-summary-then-function-call", "tool_calls", None, None),
        ("responses", "12-reasoning-then-function-call-usage-at-end", "tool_calls", None, None),
        ("responses", "14-openrouter-comment-reasoning-text-done-sentinel", "stop", [], "4"),
        ("anthropic", "09-many-pings-tool-only", "tool_calls",
         [("toolu_019Zvehfe1XQWweT1pm7okyt", "weather", {"location": "San Francisco"})], None),
        ("anthropic", "04-tool-use-no-args", "tool_calls", None, "I'll update the issue list"),
        ("anthropic", "03-text-then-tool-use", "tool_calls", None, "I'll invoke the JSON"),
        ("anthropic", "13-thinking-only-then-short-text", "stop", [], "925 ÷ 5 = 185"),
        ("anthropic", "01-redacted-thinking", "stop", [], "I notice"),
        ("anthropic", "11-refusal-stop-handwritten", "content_filter", [], None),
        ("anthropic", "12-duplicate-message-start-handwritten", "stop", [], "Hello, World!"),
    ],
)  # fmt: skip
def test_a_recorded_stream_assembles_into_its_answer(
    api: ModelApi, name: str, finish: str, tool_calls: list[Any] | None, text: str | None
) -> None:
    answer = assembled(api, name)
    assert answer.finish_reason == finish
    assert answer.usage is not None and answer.usage["total_tokens"] > 0
    if tool_calls is not None:
        assert calls(answer) == tool_calls
    else:
        assert calls(answer) and all(call_id for call_id, _, _ in calls(answer))
    assert (answer.content or "").startswith(text or "") and (
        text is not None or not answer.content
    )
    # The whole answer reads as its stream; what the encoders write reads back the same.
    codec = responses if api == "responses" else anthropic
    whole = codec.answer_from_body(whole_answer(api, recorded_events(api, name)))
    assert (calls(whole), whole.content, whole.finish_reason) == (
        calls(answer), answer.content, answer.finish_reason,
    )  # fmt: skip
    body = codec.whole_body(
        answer.message, answer.finish_reason, answer.usage, model="m", response_id="r1"
    )
    again = codec.answer_from_body(body)
    replayed = (
        responses.ResponsesAssembler() if api == "responses" else anthropic.AnthropicAssembler()
    )
    for event in codec.stream_events(body):
        replayed.add(event)
    for read in (again, replayed.result()):
        assert calls(read) == calls(answer) and read.content == answer.content
        assert read.finish_reason == answer.finish_reason
        assert read.message.get("reasoning_content") == answer.message.get("reasoning_content")


def test_an_error_mid_stream_is_the_answers_error() -> None:
    with pytest.raises(WireError, match="exceeded your current quota"):
        assembled("responses", "01-error-mid-stream-insufficient-quota")


def test_a_request_reads_into_chat_messages_and_back() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "w", "arguments": '{"a": 1}'}},
            {"id": "c2", "type": "function", "function": {"name": "w", "arguments": '{"a": 2}'}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "rain"},
    ]  # fmt: skip
    tools = [{"type": "function", "function": {"name": "w", "parameters": {"type": "object"}}}]
    for codec in (responses, anthropic):
        body = codec.request_body("m", messages, tools, {"temperature": 0}, stream=True)
        read, read_tools, params = codec.request_parts(body)
        assert read == messages and read_tools == tools
        assert params["temperature"] == 0
    body = anthropic.request_body("m", messages, tools, {}, stream=False)
    assert [b["type"] for b in body["messages"][-1]["content"]] == ["tool_result", "tool_result"]


def test_a_freeform_call_reads_and_writes_as_a_custom_call() -> None:
    from agent_core.wire.codecs import codec_for

    patch = "*** Begin Patch\n*** End Patch\n"
    item = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_p", "name": "apply_patch",
            "input": patch, "status": "completed"}  # fmt: skip
    answer = responses.answer_from_body({"object": "response", "output": [item]})
    call = {"id": "call_p", "type": "custom", "custom": {"name": "apply_patch", "input": patch}}
    assert answer.message["tool_calls"] == [call] and answer.finish_reason == "tool_calls"
    [part] = (
        codec_for("responses").whole_response({"object": "response", "output": [item]}).tool_calls
    )
    assert (part.id, part.name, part.arguments) == ("call_p", "apply_patch", patch)
    # Sent back in the Responses format: the call as its own item, its result as the
    # freeform tool's output item; and read again, the same messages.
    messages = [
        {"role": "user", "content": "patch it"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_p", "content": "Done"},
    ]
    body = responses.request_body("m", messages, [], {}, stream=False)
    assert body["input"][1:] == [
        {"type": "custom_tool_call", "call_id": "call_p", "name": "apply_patch", "input": patch},
        {"type": "custom_tool_call_output", "call_id": "call_p", "output": "Done"},
    ]
    assert responses.request_parts(body)[0] == messages
    whole = responses.whole_body(answer.message, "tool_calls", None, model="m", response_id="r")
    assert whole["output"][0]["type"] == "custom_tool_call"
    assert whole["output"][0]["input"] == patch


def test_provider_calls_are_read_with_their_results() -> None:
    body = {"content": [
        {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "q"}},
        {"type": "web_search_tool_result", "tool_use_id": "srv_1",
         "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}},
        {"type": "mcp_tool_use", "id": "mcp_1", "name": "echo", "server_name": "tools",
         "input": {"text": "hi"}},
        {"type": "mcp_tool_result", "tool_use_id": "mcp_1", "is_error": False,
         "content": [{"type": "text", "text": "hi"}]},
    ]}  # fmt: skip
    calls = anthropic.provider_calls(body)
    assert [(c.id, c.name, c.arguments_raw, c.result, c.error) for c in calls] == [
        ("srv_1", "web_search", '{"query": "q"}', '{"error_code": "max_uses_exceeded", '
         '"type": "web_search_tool_result_error"}', "max_uses_exceeded"),
        ("mcp_1", "tools.echo", '{"text": "hi"}', "hi", None),
    ]  # fmt: skip
    output = [{"type": "mcp_call", "id": "mcp_2", "server_label": "docs", "name": "search",
               "arguments": '{"q":"x"}', "output": "found", "status": "completed"},
              {"type": "web_search_call", "id": "ws_1", "status": "completed",
               "action": {"type": "search", "query": "x"}}]  # fmt: skip
    hosted = responses.provider_calls({"output": output})
    assert [(c.name, c.arguments_raw, c.result) for c in hosted] == [
        ("docs.search", '{"q":"x"}', "found"),
        ("web_search", '{"type": "search", "query": "x"}', None),
    ]


# Stream texts with and without each format's last event: look-alikes in a chunk's text, a
# last event after a long run of chunks, and the forms the expressions allow.
_CHUNK = b'data: {"choices":[{"delta":{"content":"[DONE] completed message_stop"}}]}\n\n'
_ENDINGS: dict[ModelApi, list[bytes]] = {
    "chat": [b"data: [DONE]\n\n", b"data:[DONE]\n", b"xdata: [DONE]", b"data: [DONE"],
    "responses": [
        b'event: response.completed\ndata: {"type":"response.completed"}\n\n',
        b"event: response.failed\n",
        b'data: {"type": "error"}\n\n',
        b'data: {"status":"completed","type":"response.output_item.done"}\n\n',
        b"response.completedly",
    ],
    "anthropic": [
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
        b'data: {"type":"error"}\n\n',
        b"xmessage_stop",
        b"message_stops",
    ],
}


@pytest.mark.parametrize("api", list(_ENDINGS))
def test_a_last_event_is_found_as_its_expression_finds_it(api: ModelApi) -> None:
    """`holds_last_event` reads only from just before a mark of the last event, and says
    what a search of the whole text with the format's expression says, in every piece."""
    codec = codec_for(api)
    for ending in _ENDINGS[api]:
        text = _CHUNK * 3 + ending + _CHUNK
        for start in range(len(text)):
            for stop in range(start, len(text) + 1, 7):
                piece = text[start:stop]
                found = codec.last_event.search(piece) is not None
                assert holds_last_event(codec, piece) is found, (api, piece)
