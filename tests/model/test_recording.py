"""RecordingModel: every item becomes the right trace event, in order, with gapless seq,
text deltas are pushed for live display, and the API key never reaches a trace."""

from __future__ import annotations

import json

import pytest

from agent_core.agent import TextDelta
from agent_core.model.base import Completed, ModelCall, ModelError
from agent_core.model.openai_client import OpenAIChatModel
from agent_core.model.recording import RecordingModel
from agent_core.model.retry import RetryPolicy
from agent_core.model.scripted import ScriptedModel
from tests.support.servers import Sequence, text_chunks
from traces.events import Error, ModelChunk, ModelRequest, ModelResponse
from traces.recorder import Recorder
from traces.writer import MemorySink
from workbench.engine.http.model_server import ModelServer, Reply

SECRET = "sk-live-3f9a7c0d1e2b4a5968f7e6d5c4b3a291"
CALL = ModelCall(
    messages=[{"role": "user", "content": "say hi"}],
    tools=[
        {"type": "function", "function": {"name": "noop", "description": "x", "parameters": {}}}
    ],
    params={"temperature": 0},
)


def recorder_with_sink(turn: int = 3) -> tuple[Recorder, MemorySink]:
    sink = MemorySink()
    recorder = Recorder("run-1", [sink])
    recorder.turn = turn
    return recorder, sink


async def test_events_for_a_retried_call() -> None:
    replies = Sequence(
        Reply(status=503, body={"error": {"message": "overloaded"}}),
        Reply(
            chunks=text_chunks(
                "hi there", usage={"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}
            )
        ),
    )
    recorder, sink = recorder_with_sink()
    with ModelServer(replies) as server:
        inner = OpenAIChatModel(
            server.base_url, SECRET, "m", retry=RetryPolicy(initial_backoff_s=0.001)
        )
        model = RecordingModel(inner, recorder)
        items = [item async for item in model.stream(CALL, estimated_tokens=42)]
        await inner.aclose()
        assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"

    events = sink.events
    assert [e.seq for e in events] == list(range(len(events)))
    assert all(e.turn == 3 and e.run_id == "run-1" for e in events)
    types = [e.type for e in events]
    assert types[:3] == ["model_request", "error", "model_request"]
    assert types[-1] == "model_response"
    assert set(types[3:-1]) == {"model_chunk"}

    first, failed, second = events[0], events[1], events[2]
    assert isinstance(first, ModelRequest) and isinstance(second, ModelRequest)
    assert (first.attempt, second.attempt) == (1, 2)
    assert first.messages == CALL.messages and first.tools == CALL.tools
    assert first.params == {"temperature": 0} and first.stream is True
    assert first.estimated_tokens == 42
    assert isinstance(failed, Error)
    assert (failed.where, failed.kind, failed.retriable, failed.attempt, failed.status_code) == (
        "model",
        "status",
        True,
        1,
        503,
    )
    chunks = [e for e in events if isinstance(e, ModelChunk)]
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert all(c.attempt == 2 and c.elapsed_ms >= 0 for c in chunks)
    assert chunks[-1].data["usage"]["total_tokens"] == 6
    response = events[-1]
    assert isinstance(response, ModelResponse)
    assert response.message == {"role": "assistant", "content": "hi there"}
    assert response.finish_reason == "stop"
    assert response.usage == {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}
    assert response.attempt == 2 and response.chunks == len(chunks)
    assert response.ttft_ms is not None and response.latency_ms >= response.ttft_ms

    # Items are re-yielded unchanged, and text deltas are queued for the live printer.
    assert isinstance(items[-1], Completed)
    deltas = [item for item in recorder.drain() if isinstance(item, TextDelta)]
    assert "".join(d.text for d in deltas) == "hi there"
    assert all(d.turn == 3 for d in deltas)


async def test_api_key_never_in_recorded_events() -> None:
    # The server answers with errors that quote the request; the key must still not leak.
    replies = Sequence(
        Reply(status=500, body={"error": {"message": f"bad key {SECRET}"}}),
        Reply(status=401, body={"error": {"message": f"invalid api key {SECRET}"}}),
    )
    recorder, sink = recorder_with_sink()
    with ModelServer(replies) as server:
        inner = OpenAIChatModel(
            server.base_url, SECRET, "m", retry=RetryPolicy(initial_backoff_s=0.001)
        )
        model = RecordingModel(inner, recorder)
        with pytest.raises(ModelError) as raised:
            async for _ in model.stream(CALL):
                pass
        await inner.aclose()
    assert SECRET not in str(raised.value)
    assert SECRET not in (model.base_url or "")
    dumped = "\n".join(json.dumps(e.model_dump(mode="json")) for e in sink.events)
    assert [e.type for e in sink.events] == ["model_request", "error", "model_request", "error"]
    assert SECRET not in dumped


async def test_scripted_model_records_the_same_event_shapes() -> None:
    recorder, sink = recorder_with_sink(turn=1)
    model = RecordingModel(ScriptedModel([{"content": "hi there"}]), recorder)
    assert model.name == "scripted" and model.base_url is None
    async for _ in model.stream(CALL):
        pass
    types = [e.type for e in sink.events]
    assert types[0] == "model_request" and types[-1] == "model_response"
    assert set(types[1:-1]) == {"model_chunk"}
    response = sink.events[-1]
    assert isinstance(response, ModelResponse)
    assert response.message == {"role": "assistant", "content": "hi there"}
