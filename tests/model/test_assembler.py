"""Assembler rules that no capture exercises on its own."""

from __future__ import annotations

from typing import Any

from agent_core.wire.chat_completions import assemble, chunk_from_completion


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **top: Any
) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}], **top}


def call(**fields: Any) -> dict[str, Any]:
    return {"tool_calls": [fields]}


def test_no_index_and_no_id_continues_the_single_call() -> None:
    response = assemble(
        [
            chunk(call(function={"name": "read_file", "arguments": '{"pa'})),
            chunk(call(function={"arguments": 'th": "x"}'})),
        ]
    )
    [only] = response.tool_calls
    assert (only.name, only.arguments) == ("read_file", '{"path": "x"}')
    assert only.id == "call_0" and response.extra == {"generated_ids": ["call_0"]}


def test_id_keys_calls_when_index_is_missing() -> None:
    response = assemble(
        [
            chunk(call(id="a", function={"name": "one", "arguments": "{"})),
            chunk(call(id="b", function={"name": "two", "arguments": "{"})),
            chunk(call(id="a", function={"arguments": "}"})),
            chunk(call(id="b", function={"arguments": "}"})),
        ]
    )
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("a", "one", "{}"),
        ("b", "two", "{}"),
    ]
    assert response.extra == {}


def test_null_arguments_and_null_entries_are_empty() -> None:
    response = assemble(
        [
            chunk(call(index=0, id="c", function={"name": "ping", "arguments": None})),
            chunk({"tool_calls": [None]}),
        ]
    )
    assert [(c.id, c.arguments) for c in response.tool_calls] == [("c", "")]


def test_reused_index_with_a_new_id_and_name_is_a_new_call() -> None:
    response = assemble(
        [
            chunk(call(index=0, id="first", function={"name": "a", "arguments": "{}"})),
            chunk(call(index=0, id="second", function={"name": "b", "arguments": "{}"})),
        ]
    )
    assert [(c.id, c.name) for c in response.tool_calls] == [("first", "a"), ("second", "b")]


def test_only_the_first_choice_is_assembled() -> None:
    response = assemble(
        [
            {
                "choices": [
                    {"index": 1, "delta": {"content": "other"}},
                    {"index": 0, "delta": {"content": "mine"}},
                ]
            }
        ]
    )
    assert response.content == "mine"


def test_usage_falls_back_to_x_groq_and_prefers_top_level() -> None:
    groq_only = assemble([chunk({}, "stop", x_groq={"usage": {"total_tokens": 5}})])
    assert groq_only.usage == {"total_tokens": 5}
    both = assemble(
        [chunk({}, "stop", usage={"total_tokens": 7}, x_groq={"usage": {"total_tokens": 5}})]
    )
    assert both.usage == {"total_tokens": 7}


def test_non_streamed_completion_goes_through_the_same_rules() -> None:
    body = {
        "id": "x",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "reasoning_content": "think",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "a", "arguments": "{}"},
                        },
                        {"type": "function", "function": {"name": "b", "arguments": None}},
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"total_tokens": 3},
    }
    response = assemble([chunk_from_completion(body)])
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("c1", "a", "{}"),
        ("call_1", "b", ""),
    ]
    assert response.extra == {"generated_ids": ["call_1"]}
    assert (response.content, response.reasoning) == (None, "think")
    assert response.finish_reason == "tool_calls" and response.usage == {"total_tokens": 3}
