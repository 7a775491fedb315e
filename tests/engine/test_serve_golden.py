"""`serve-model` serves every golden trace (tests/fixtures/traces/v1..v3) in both match modes.

Each recorded request is sent as it was recorded, by the SDK of its wire format (the openai
SDK for chat completions and the Responses API, the anthropic SDK for Messages), and must
get the recorded answer back: the recorded text and tool calls, or the recorded error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tests.engine.test_serve_model import serve
from traces.events import ModelRequest
from traces.tree import TurnNode
from workbench.engine.recording.runs.load import Recording, read_recording_file

TRACES = Path(__file__).parents[1] / "fixtures" / "traces"
GOLDEN = sorted(TRACES.glob("v*/*.jsonl"))

# What an answer says: its text, and each tool call's id, name and arguments as JSON. The
# text without its outer spaces: v1's generator streamed each word with a space after it and
# recorded the message without the last one.
Said = tuple[str, list[tuple[str, str, Any]]]


def recorded_answer(turn: TurnNode) -> Said | int:
    """The text and tool calls the turn answered, or the status of its recorded error."""
    if turn.response is None:
        error = turn.model_errors[-1] if turn.model_errors else None
        return error.status_code if error and error.status_code else 500
    message = turn.response.message
    calls = [
        (c["id"], c["function"]["name"], arguments(c["function"]["arguments"]))
        for c in message.get("tool_calls") or []
    ]
    return (message.get("content") or "").strip(), calls


def arguments(text: str | None) -> Any:
    """Arguments as the JSON value they spell; a model may also send text that is not JSON."""
    try:
        return json.loads(text or "{}")
    except ValueError:
        return text


def ask_chat(base_url: str, request: ModelRequest, model: str) -> Said:
    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    sent: dict[str, Any] = {"model": model, "messages": request.messages, **request.params}
    if request.tools:
        sent["tools"] = request.tools
    if not request.stream:
        message = client.chat.completions.create(stream=False, **sent).choices[0].message
        function_calls = [c for c in message.tool_calls or [] if c.type == "function"]
        return (message.content or "").strip(), [
            (c.id, c.function.name, arguments(c.function.arguments)) for c in function_calls
        ]
    text, calls = "", dict[int, list[str]]()
    for chunk in client.chat.completions.create(stream=True, **sent):
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, ["", "", ""])
                call[0] += delta.id or ""
                call[1] += (delta.function.name or "") if delta.function else ""
                call[2] += (delta.function.arguments or "") if delta.function else ""
    return text.strip(), [(i, name, arguments(args)) for i, name, args in calls.values()]


def ask_responses(base_url: str, body: dict[str, Any]) -> Said:
    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    if body.get("stream"):
        events = list(client.responses.create(**body))
        response = next(e.response for e in events if e.type == "response.completed")
    else:
        response = client.responses.create(**body)
    calls = [
        (item.call_id, item.name, arguments(item.arguments))
        for item in response.output
        if item.type == "function_call"
    ]
    return response.output_text.strip(), calls


def ask_anthropic(base_url: str, body: dict[str, Any]) -> Said:
    client = anthropic.Anthropic(
        base_url=base_url.removesuffix("/v1"), api_key="sk-ant-test", max_retries=0
    )
    if body.get("stream"):
        with client.messages.stream(**{k: v for k, v in body.items() if k != "stream"}) as s:
            message = s.get_final_message()
    else:
        message = client.messages.create(**body)
    text = "".join(block.text for block in message.content if block.type == "text").strip()
    calls = [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]
    return text, calls


def ask(base_url: str, recording: Recording, request: ModelRequest) -> Said | int:
    """The request sent as recorded, by its format's SDK; the answer, or the error status."""
    try:
        if request.api == "responses" and request.body is not None:
            return ask_responses(base_url, request.body)
        if request.api == "anthropic" and request.body is not None:
            return ask_anthropic(base_url, request.body)
        return ask_chat(base_url, request, recording.run_start.model)
    except (openai.APIStatusError, anthropic.APIStatusError) as exc:
        if exc.status_code == 409:
            raise AssertionError(str(exc.body)) from None
        return exc.status_code


@pytest.mark.parametrize("mode", ["exact", "meaning"])
def test_every_golden_trace_is_served_at_every_turn(mode: str) -> None:
    recordings = [read_recording_file(path) for path in GOLDEN]
    assert {path.parent.name for path in GOLDEN} == {"v1", "v2", "v3"}
    apis = {r.turns[n].request.api for r in recordings for n in r.model_turns}  # type: ignore[union-attr]
    assert apis == {"chat", "responses", "anthropic"}
    wrong: list[str] = []
    served = 0
    with serve("--replay", *map(str, GOLDEN), "--match", mode) as base_url:
        for recording in recordings:
            for number in recording.model_turns:
                turn = recording.turns[number]
                assert turn.request is not None
                try:
                    got: Said | int | str = ask(base_url, recording, turn.request)
                except AssertionError as refused:
                    got = f"refused: {str(refused)[:300]}"
                want = recorded_answer(turn)
                served += 1
                if got != want:
                    wrong.append(f"{recording.run_id} turn {number}: {got!r} != {want!r}")
    assert not wrong, "\n".join(wrong)
    assert served == sum(len(r.model_turns) for r in recordings) >= 22


def said_without_text(request: ModelRequest, content: str | None) -> ModelRequest:
    """The request with each assistant tool-call message's missing text said as `content`."""
    messages = [
        {**m, "content": content} if m["role"] == "assistant" and m.get("tool_calls") else m
        for m in request.messages
    ]
    return request.model_copy(update={"messages": messages})


def test_match_exact_reads_tool_calls_without_text_and_numbers_as_json_does() -> None:
    # v1 recorded an assistant tool-call message without text as null, v2 as "".
    v1 = TRACES / "v1" / "9885cb1103bd5320996b905ed85bc767.jsonl"
    v2 = TRACES / "v2" / "5a0e2c7d9b8f4e21a3c6d0f1e2b4a6c8.jsonl"
    older, newer = read_recording_file(v1), read_recording_file(v2)
    older_turn, newer_turn = older.turns[3].request, newer.turns[3].request
    assert older_turn is not None and newer_turn is not None
    assert [m["content"] for m in older_turn.messages[2::2]] == [None, None]
    assert [m["content"] for m in newer_turn.messages[2::2]] == ["", ""]
    with serve("--replay", str(v1), str(v2), "--match", "exact") as base_url:
        for recording, request, content in ((older, older_turn, ""), (newer, newer_turn, None)):
            sent = said_without_text(request, content)
            assert ask(base_url, recording, sent) == recorded_answer(recording.turns[3])
        # `temperature: 0` is the recorded `0.0`, as JSON reads both.
        first = older.turns[1]
        assert first.request is not None and first.request.params["temperature"] == 0.0
        sent = first.request.model_copy(update={"params": {"temperature": 0}})
        assert ask(base_url, older, sent) == recorded_answer(first)
        # A request the level refuses is told the first field it differs in.
        changed = said_without_text(newer_turn, "Reading it.")
        with pytest.raises(openai.ConflictError) as refused:
            ask_chat(base_url, changed, newer.run_start.model)
    body = refused.value.body
    assert isinstance(body, dict) and (body["run_id"], body["turn"]) == (newer.run_id, 3)
    assert [d["path"] for d in body["diffs"]] == ["messages[2].content", "messages[4].content"]
    assert body["message"].endswith("first difference at messages[2].content")
