"""A model that returns garbage ends the run with status `error` and one readable reason,
never an internal error; the trace records each failed attempt."""

from __future__ import annotations

import pytest

from agent_core.agent import Agent, AgentConfig
from agent_core.model.openai_client import OpenAIChatModel
from agent_core.model.retry import RetryPolicy
from traces.events import Error, RunEnd
from traces.writer import MemorySink
from workbench.engine.http.model_server import ModelServer, Reply

GARBAGE = {
    "sse data that is not JSON": (Reply(chunks=["data: <html>oops</html>", ""]), True),
    "JSON chunks with no choices": (Reply(chunks=[{"hello": "world"}], done=True), True),
    "choices that are not a list": (Reply(chunks=[{"choices": "nope"}], done=True), True),
    "content that is not text": (
        Reply(chunks=[{"choices": [{"index": 0, "delta": {"content": 5}}]}], done=True),
        True,
    ),
    "an HTML error page": (Reply(body="<html>502 bad gateway</html>"), False),
    "JSON that is not a completion": (Reply(body={"foo": 1}), False),
    "a completion whose choices are garbage": (Reply(body={"choices": ["x"]}), False),
}


@pytest.mark.parametrize("case", list(GARBAGE))
async def test_garbage_from_the_model_is_a_clear_error(case: str) -> None:
    reply, streaming = GARBAGE[case]
    with ModelServer(lambda body: reply) as server:
        model = OpenAIChatModel(
            server.base_url,
            None,
            "m",
            stream=streaming,
            retry=RetryPolicy(max_attempts=2, initial_backoff_s=0.01),
        )
        sink = MemorySink()
        result = await Agent(model, [], AgentConfig(task="hi"), sinks=[sink]).run()

    assert result.status == "error"
    assert result.reason.startswith("model call failed: ")
    assert "internal error" not in result.reason and "\n" not in result.reason
    errors = [e for e in sink.events if isinstance(e, Error)]
    assert errors and all(e.where == "model" for e in errors)
    assert isinstance(sink.events[-1], RunEnd) and sink.events[-1].status == "error"
