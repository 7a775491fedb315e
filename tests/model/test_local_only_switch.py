"""The test suite's switch that keeps every test away from real model endpoints."""

from __future__ import annotations

import os

from agent_core.agent import Agent, AgentConfig
from agent_core.model.openai_client import LOCAL_ONLY_ENV, OpenAIChatModel
from traces.events import Error, RunEnd
from traces.writer import MemorySink


def test_the_suite_runs_with_the_switch_on() -> None:
    assert os.environ.get(LOCAL_ONLY_ENV) == "1"


async def test_a_remote_endpoint_is_refused_before_anything_is_sent() -> None:
    model = OpenAIChatModel("https://models.example.invalid/v1", "sk-test-remote", "gpt")
    sink = MemorySink()
    result = await Agent(model, [], AgentConfig(task="hi"), sinks=[sink]).run()

    assert result.status == "error"
    assert LOCAL_ONLY_ENV in result.reason
    assert any(isinstance(e, Error) and LOCAL_ONLY_ENV in e.message for e in sink.events)
    assert isinstance(sink.events[-1], RunEnd)
