"""Every dialect real producers write, from the real instrumentation libraries: each drives
the same two-turn task (ask for `count_lines`, get "3", answer) through the real openai
client against the local model server, exporting over OTLP/HTTP to `workbench collect`.
Each gives one run whose `show` has both model calls, the tool call with its result, and
the tokens. The recorded exports under tests/fixtures/otlp/ import the same way through
`ingest-otel`.

Needs the otel-producers extra (`pip install -e '.[otel-producers]'`); each producer is
skipped without its library.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from traces.events import ModelRequest, RunStart
from traces.reader import read_trace
from traces.tree import build_chain
from workbench.cli import main

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")

from tests.interop.producers import (
    ANSWER,
    ASK_TOOL,
    FIXTURES,
    PRODUCERS,
    SYSTEM,
    TASK,
    export_to,
    producer,
)
from tests.support.servers import Sequence
from workbench.engine.http.model_server import ModelServer
from workbench.engine.otel.collect import Collector

# The instrumentation scope each producer's model-call spans carry.
CLIENTS = {
    "genai-latest": "opentelemetry.util.genai",
    "genai-latest-events": "opentelemetry.util.genai",
    "openllmetry": "opentelemetry.instrumentation.openai",
    "genai-events": "opentelemetry.instrumentation.openai",
    "pydantic-ai": "pydantic-ai",
    "pydantic-ai-v2": "pydantic-ai",
    "openai-agents": "openinference.instrumentation.openai_agents",
}


def check_run(path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """What every producer's run must have, and what `show` prints of it."""
    events = read_trace(path).events
    start = events[0]
    assert isinstance(start, RunStart) and start.origin == "imported"
    assert start.client is not None and start.client.startswith(CLIENTS[name])
    assert (start.task, start.model) == (TASK, "local-model")
    if name != "openai-agents":  # its spans leave the instructions out
        assert start.system_prompt == SYSTEM
    # opentelemetry-instrumentation-openai-v2 writes no `gen_ai.tool.definitions`, and
    # OpenLLMetry writes its `llm.request.functions` only with its attributes on.
    sends_tools = ("openllmetry", "pydantic-ai", "pydantic-ai-v2", "openai-agents")
    offered = ["count_lines"] if name in sends_tools else []
    assert [tool["function"]["name"] for tool in start.tools] == offered

    chain = build_chain(events)
    assert chain.status == "completed"
    first, second = chain.turns
    assert first.response is not None and second.response is not None
    assert first.response.usage == {
        "prompt_tokens": 61,
        "completion_tokens": 17,
        "total_tokens": 78,
    }
    assert second.response.usage is not None and second.response.usage["prompt_tokens"] == 90
    (call,) = first.tool_calls
    assert (call.name, call.call_id, call.arguments, call.status) == (
        "count_lines",
        "call_n1",
        {"path": "notes.txt"},
        "ok",
    )
    assert call.end is not None and call.end.result == "3"
    assert not second.tool_calls
    request = second.request
    assert isinstance(request, ModelRequest)
    answered = [m for m in request.messages if m["role"] == "tool"]
    assert answered == [{"role": "tool", "tool_call_id": "call_n1", "content": "3"}]
    assert not [m for m in request.messages if m.get("content") == "null"]
    assert chain.end is not None and chain.end.final_answer == "notes.txt has 3 lines."
    assert "sk-test-not-real" not in path.read_text(encoding="utf-8")

    capsys.readouterr()
    assert main(["show", start.run_id[:8]]) == 0
    shown = capsys.readouterr().out
    assert "tool count_lines [ok" in shown and "end: completed" in shown
    assert "last user: null" not in shown
    assert "61" in shown and "17" in shown  # the first call's tokens


@pytest.mark.parametrize("name", list(PRODUCERS))
def test_a_real_producer_becomes_one_run(
    name: str, wb_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_producer = producer(name)
    kept: list[str] = []
    with (
        ModelServer(Sequence(ASK_TOOL, ANSWER)) as server,
        Collector(wb_home) as collector,
    ):
        with export_to(collector.base_url, kept) as (tracer_provider, logger_provider):
            run_producer(server.base_url, tracer_provider, logger_provider)
        (run,) = collector.wait_for_runs(1)
        assert not collector.receiver.skipped
    assert (run.status, run.turns) == ("completed", 2)
    if os.environ.get("WORKBENCH_RECORD_OTLP"):
        FIXTURES.mkdir(parents=True, exist_ok=True)
        (FIXTURES / f"{name}.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    check_run(run.path, name, capsys)


@pytest.mark.parametrize("name", list(PRODUCERS))
def test_a_recorded_export_imports_as_the_same_run(
    name: str, wb_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixture = FIXTURES / f"{name}.jsonl"
    assert main(["ingest-otel", str(fixture), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert (run["status"], run["turns"], run["written"]) == ("completed", 2, True)
    check_run(Path(run["path"]), name, capsys)


def test_a_pydantic_ai_run_forks_at_turn_two_with_its_tool_result_mocked(
    wb_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its tool result is a `tool` message answering the call `show` lists, so the history
    rebuilt for turn 2 is well-formed and the mock replaces that result."""
    assert main(["ingest-otel", str(FIXTURES / "pydantic-ai.jsonl"), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    with ModelServer(Sequence(ANSWER)) as server:
        code = main(
            [
                "fork",
                run["run_id"][:8],
                "--turn",
                "2",
                "--mock",
                "call_n1=5",
                "--base-url",
                server.base_url,
                "--model",
                "local-model",
                "--api-key",
                "sk-test-not-real",
                "--quiet",
            ]
        )
        sent = server.bodies
    assert code == 0, capsys.readouterr().err
    (request,) = sent
    tool_messages = [m for m in request["messages"] if m["role"] == "tool"]
    assert tool_messages == [{"role": "tool", "tool_call_id": "call_n1", "content": "5"}]
