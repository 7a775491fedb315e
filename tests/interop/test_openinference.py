"""Spans from a real instrumentation library: `openinference-instrumentation-openai` around
the openai client, talking to the local model server, exported by the OpenTelemetry SDK to
`workbench collect`. The agent loop here is the application's own, as in any app that
instruments the openai client; the workbench sees only the spans.

Needs `openinference-instrumentation-openai` (in the dev extra); skipped without it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from traces.events import ModelRequest, RunStart
from traces.reader import read_trace
from traces.tree import build_chain
from workbench.cli import main

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")
pytest.importorskip(
    "openinference.instrumentation.openai",
    reason="needs openinference-instrumentation-openai (pip install -e '.[dev]')",
)

from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.support.servers import Sequence, completion
from workbench.engine.http.model_server import ModelServer, Reply
from workbench.engine.otel.collect import Collector

TASK = "How many lines does notes.txt have?"
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "count_lines",
            "description": "Count the lines of a text file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]


def _completion(message: dict[str, Any], finish: str, usage: tuple[int, int]) -> Reply:
    return completion(message, finish, usage, model="local-model")


ASK_TOOL = _completion(
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_n1",
                "type": "function",
                "function": {"name": "count_lines", "arguments": '{"path": "notes.txt"}'},
            }
        ],
    },
    "tool_calls",
    (61, 17),
)
ANSWER = _completion({"role": "assistant", "content": "notes.txt has 3 lines."}, "stop", (90, 9))


def _run_instrumented_agent(base_url: str, endpoint: str) -> None:
    """An application's own two-turn agent loop, instrumented with OpenInference."""
    import openai

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = openai.OpenAI(base_url=base_url, api_key="sk-test-not-real")
        tracer = provider.get_tracer("notes-agent")
        messages: list[Any] = [
            {"role": "system", "content": "Answer with the tools."},
            {"role": "user", "content": TASK},
        ]
        attributes = {"openinference.span.kind": "AGENT", "input.value": TASK}
        with tracer.start_as_current_span("notes agent", attributes=attributes) as agent:
            for _ in range(3):
                response = client.chat.completions.create(
                    model="local-model",
                    messages=messages,
                    tools=TOOLS,
                    temperature=0,  # type: ignore[arg-type]
                )
                message = response.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    agent.set_attribute("output.value", message.content or "")
                    break
                for call in message.tool_calls:
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": "3"})
        provider.force_flush()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def test_an_openinference_instrumented_agent_becomes_a_run(
    wb_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with (
        ModelServer(Sequence(ASK_TOOL, ANSWER)) as server,
        Collector(wb_home) as collector,
    ):
        _run_instrumented_agent(server.base_url, collector.endpoint)
        (run,) = collector.wait_for_runs(1)

    assert (run.status, run.turns) == ("completed", 2)
    events = read_trace(run.path).events
    start = events[0]
    assert isinstance(start, RunStart)
    assert start.origin == "imported"
    assert start.client is not None and start.client.startswith(
        "openinference.instrumentation.openai "
    )
    assert (start.task, start.model, start.system_prompt) == (
        TASK,
        "local-model",
        "Answer with the tools.",
    )
    assert start.tools == TOOLS
    assert start.params.get("temperature") == 0

    chain = build_chain(events)
    first, second = chain.turns
    assert first.response is not None and first.response.usage == {
        "prompt_tokens": 61,
        "completion_tokens": 17,
        "total_tokens": 78,
    }
    (call,) = first.tool_calls
    assert (call.name, call.call_id, call.start.arguments_raw, call.status) == (
        "count_lines",
        "call_n1",
        '{"path": "notes.txt"}',
        "ok",
    )
    assert call.end is not None and call.end.result == "3" and call.end.observed
    request = second.request
    assert isinstance(request, ModelRequest)
    assert [m["role"] for m in request.messages] == ["system", "user", "assistant", "tool"]
    assert request.tools == TOOLS
    assert chain.end is not None and chain.end.final_answer == "notes.txt has 3 lines."
    assert "sk-test-not-real" not in run.path.read_text(encoding="utf-8")

    # It opens like any run: listed, shown turn by turn.
    assert main(["runs", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert (listed["task"], listed["status"], listed["tool_calls"]) == (TASK, "completed", 1)
    assert main(["show", run.run_id[:8]]) == 0
    shown = capsys.readouterr().out
    assert "tool count_lines [ok" in shown and "end: completed" in shown

    # Its messages are complete, so it feeds a regression case (`from_run`, turn 1).
    from workbench.engine.regress.context import ToolCall, load_context

    context = load_context(run.path, 1)
    assert context.chosen == [ToolCall("count_lines", {"path": "notes.txt"})]
    assert [tool["function"]["name"] for tool in context.tools] == ["count_lines"]
    assert [m["role"] for m in context.plan.messages] == ["system", "user"]
