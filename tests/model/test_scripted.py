"""The scripted and function models: they follow the script, fail loudly on surprises, and
yield the same item shapes as the real client (and, through the HTTP server, the same
assembled answers)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agent_core.model.base import (
    AttemptFailed,
    AttemptStarted,
    Completed,
    ModelCall,
    ModelError,
    ModelTimeout,
    RawChunk,
    StreamItem,
)
from agent_core.model.openai_client import OpenAIChatModel
from agent_core.model.retry import RetryPolicy
from agent_core.model.script import ScriptError, ScriptExhaustedError
from agent_core.model.scripted import FunctionModel, ScriptedModel
from workbench.engine.http.model_server import ModelServer, ScriptResponder

STEPS: list[dict[str, Any]] = [
    {
        "content": "Let me read it.",
        "tool_calls": [
            {"name": "read_file", "arguments": {"path": "notes.txt"}, "id": "call_given"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        "chunk_size": 4,
    },
    {"content": "The file says hello.", "reasoning": "It is short."},
]


def call(*messages: dict, stream: bool = True) -> ModelCall:
    return ModelCall(
        messages=list(messages) or [{"role": "user", "content": "read notes.txt"}], stream=stream
    )


async def collect(model, model_call: ModelCall) -> list[StreamItem]:
    return [item async for item in model.stream(model_call)]


async def test_follows_the_script_in_order() -> None:
    model = ScriptedModel(STEPS)
    first = await collect(model, call())
    assert isinstance(first[0], AttemptStarted)
    assert all(isinstance(item, RawChunk) for item in first[1:-1])
    done = first[-1]
    assert isinstance(done, Completed)
    response = done.response
    assert response.content == "Let me read it."
    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == [
        ("call_given", "read_file", {"path": "notes.txt"})
    ]
    assert response.finish_reason == "tool_calls"
    assert response.usage == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    # chunk_size 4 splits the text into visible deltas
    deltas = [item.text_delta for item in first if isinstance(item, RawChunk) and item.text_delta]
    assert deltas == ["Let ", "me r", "ead ", "it."]

    second = (await collect(model, call()))[-1]
    assert isinstance(second, Completed)
    assert second.response.content == "The file says hello."
    assert second.response.reasoning == "It is short."
    assert second.response.finish_reason == "stop"
    model.assert_done()


async def test_unexpected_extra_call_fails_loudly() -> None:
    model = ScriptedModel([{"content": "only one"}])
    await collect(model, call())
    items: list[StreamItem] = []
    with pytest.raises(ScriptExhaustedError, match="no steps left"):
        async for item in model.stream(call()):
            items.append(item)
    assert isinstance(items[-1], AttemptFailed) and items[-1].kind == "script_exhausted"
    assert issubclass(ScriptExhaustedError, ModelError)


async def test_reports_left_over_steps() -> None:
    model = ScriptedModel(STEPS)
    await collect(model, call())
    assert len(model.remaining) == 1
    with pytest.raises(AssertionError, match="1 script step"):
        model.assert_done()


async def test_steps_can_match_on_the_last_tool_result() -> None:
    model = ScriptedModel(
        [
            {"content": "recovered", "when_last_tool_result_contains": "error"},
            {"content": "plain"},
        ]
    )
    tool_ok = {"role": "tool", "tool_call_id": "c1", "content": "all fine"}
    tool_err = {"role": "tool", "tool_call_id": "c2", "content": "error: no such file"}
    first = (await collect(model, call({"role": "user", "content": "x"}, tool_ok)))[-1]
    second = (await collect(model, call({"role": "user", "content": "x"}, tool_err)))[-1]
    assert isinstance(first, Completed) and first.response.content == "plain"
    assert isinstance(second, Completed) and second.response.content == "recovered"
    model.assert_done()


async def test_scripted_errors_behave_like_attempts() -> None:
    model = ScriptedModel(
        [
            {"error": {"status": 503, "message": "busy"}},
            {"content": "back"},
            {"error": {"status": 400}},
        ]
    )
    items = await collect(model, call())
    assert [type(i).__name__ for i in items if not isinstance(i, RawChunk)] == [
        "AttemptStarted",
        "AttemptFailed",
        "AttemptStarted",
        "Completed",
    ]
    failed = items[1]
    assert isinstance(failed, AttemptFailed) and failed.status_code == 503 and failed.will_retry
    with pytest.raises(ModelError) as raised:
        await collect(model, call())
    assert raised.value.status_code == 400


async def test_scripted_timeout() -> None:
    model = ScriptedModel([{"error": {"kind": "timeout", "message": "too slow"}}])
    with pytest.raises(ModelTimeout):
        await collect(model, call())


async def test_function_model_computes_each_step() -> None:
    async def answer(model_call: ModelCall) -> dict:
        return {"content": f"{len(model_call.messages)} messages"}

    model = FunctionModel(answer)
    done = (
        await collect(
            model, call({"role": "user", "content": "a"}, {"role": "user", "content": "b"})
        )
    )[-1]
    assert isinstance(done, Completed) and done.response.content == "2 messages"


async def test_same_items_as_the_real_client_through_the_server() -> None:
    """The scripted model in process and the same script served over HTTP to the real client
    yield the same sequence of item types and the same assembled responses."""
    in_process = ScriptedModel(STEPS)
    local = [await collect(in_process, call()), await collect(in_process, call())]
    with ModelServer(ScriptResponder(STEPS)) as server:
        real = OpenAIChatModel(
            server.base_url, "sk-test", "scripted", retry=RetryPolicy(max_attempts=1)
        )
        remote = [await collect(real, call()), await collect(real, call())]
        await real.aclose()
    for mine, theirs in zip(local, remote, strict=True):
        assert [type(i) for i in mine] == [type(i) for i in theirs]
        assert [i.data for i in mine if isinstance(i, RawChunk)] == [
            i.data for i in theirs if isinstance(i, RawChunk)
        ]
        mine_done, theirs_done = mine[-1], theirs[-1]
        assert isinstance(mine_done, Completed) and isinstance(theirs_done, Completed)
        assert mine_done.response == theirs_done.response


async def test_server_script_exhaustion_is_a_clear_non_retried_error() -> None:
    with ModelServer(ScriptResponder([])) as server:
        real = OpenAIChatModel(server.base_url, "sk-test", "scripted")
        with pytest.raises(ModelError, match="no steps left") as raised:
            await collect(real, call())
        await real.aclose()
    assert raised.value.status_code == 410
    assert len(server.bodies) == 1


def test_from_file_json_and_toml(tmp_path: Path) -> None:
    json_path = tmp_path / "script.json"
    json_path.write_text(json.dumps({"name": "demo", "steps": STEPS}))
    from_json = ScriptedModel.from_file(json_path)
    assert from_json.name == "demo" and len(from_json.remaining) == 2

    toml_path = tmp_path / "script.toml"
    toml_path.write_text(
        'name = "demo"\n'
        "[[steps]]\n"
        'content = "Reading."\n'
        "[[steps.tool_calls]]\n"
        'name = "read_file"\n'
        'arguments = { path = "notes.txt" }\n'
        "[[steps]]\n"
        'content = "Done."\n'
    )
    from_toml = ScriptedModel.from_file(toml_path)
    assert [s.content for s in from_toml.remaining] == ["Reading.", "Done."]
    assert from_toml.remaining[0].tool_calls[0].arguments == {"path": "notes.txt"}


def test_bad_script_files_give_one_line_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ScriptError, match="cannot read script"):
        ScriptedModel.from_file(missing)
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    with pytest.raises(ScriptError, match="not valid json"):
        ScriptedModel.from_file(broken)
    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps([{"contnet": "x"}]))
    with pytest.raises(ScriptError, match="contnet") as raised:
        ScriptedModel.from_file(typo)
    assert "\n" not in str(raised.value)


async def test_served_script_file_and_models_list(tmp_path: Path) -> None:
    import urllib.request

    path = tmp_path / "script.toml"
    path.write_text('name = "demo-model"\n[[steps]]\ncontent = "served from a file"\n')
    responder = ScriptResponder.from_file(path)
    with ModelServer(responder, model="demo-model") as server:
        with await asyncio.to_thread(urllib.request.urlopen, f"{server.base_url}/models") as answer:
            listing = json.load(answer)
        real = OpenAIChatModel(server.base_url, "sk-test", "demo-model")
        done = (await collect(real, call()))[-1]
        await real.aclose()
        assert server.bodies[0]["messages"] == call().messages
    assert [m["id"] for m in listing["data"]] == ["demo-model"]
    assert isinstance(done, Completed) and done.response.content == "served from a file"
    responder.script.assert_done()
