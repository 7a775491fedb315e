"""Streaming and non-streaming answers go through one assembler and come out the same."""

from __future__ import annotations

import pytest

from agent_core.model.base import Completed, ModelCall, RawChunk
from agent_core.model.openai_client import OpenAIChatModel
from agent_core.model.scripted import ScriptedModel
from workbench.engine.http.model_server import ModelServer, ScriptResponder

ANSWER = {
    "content": "Reading both files.",
    "reasoning": "Two files, two calls.",
    "tool_calls": [
        {"name": "read_file", "arguments": {"path": "a.txt"}, "id": "call_a"},
        {"name": "read_file", "arguments": {"path": "b.txt"}, "id": "call_b"},
    ],
    "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
    "chunk_size": 5,
}


@pytest.mark.parametrize("transport", ["http", "in_process"])
async def test_stream_and_no_stream_assemble_the_same(transport: str) -> None:
    responses = {}
    chunk_counts = {}
    if transport == "http":
        with ModelServer(ScriptResponder([ANSWER, ANSWER])) as server:
            model = OpenAIChatModel(server.base_url, "sk-test", "m")
            for stream in (True, False):
                items = [i async for i in model.stream(ModelCall(messages=[], stream=stream))]
                responses[stream] = items[-1]
                chunk_counts[stream] = sum(isinstance(i, RawChunk) for i in items)
            await model.aclose()
            assert server.bodies[0]["stream"] is True and server.bodies[1]["stream"] is False
    else:
        scripted = ScriptedModel([ANSWER, ANSWER])
        for stream in (True, False):
            items = [i async for i in scripted.stream(ModelCall(messages=[], stream=stream))]
            responses[stream] = items[-1]
            chunk_counts[stream] = sum(isinstance(i, RawChunk) for i in items)
    streamed, whole = responses[True], responses[False]
    assert isinstance(streamed, Completed) and isinstance(whole, Completed)
    assert streamed.response == whole.response
    assert streamed.response.content == "Reading both files."
    assert [c.id for c in streamed.response.tool_calls] == ["call_a", "call_b"]
    assert chunk_counts[True] > 1 and chunk_counts[False] == 1


async def test_model_level_no_stream_switch() -> None:
    with ModelServer(ScriptResponder([ANSWER])) as server:
        model = OpenAIChatModel(server.base_url, "sk-test", "m", stream=False)
        items = [i async for i in model.stream(ModelCall(messages=[], stream=True))]
        await model.aclose()
        assert server.bodies[0]["stream"] is False
    assert isinstance(items[-1], Completed)
    assert items[-1].response.usage == ANSWER["usage"]
