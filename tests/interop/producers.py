"""Real producers of GenAI telemetry, each driving the same two-turn tool-calling task
through the real openai client against the local model server, exporting what its
instrumentation writes over OTLP/HTTP (spans, and log records where it writes them).

Each producer is a function of (base URL, tracer provider, logger provider). `export_to`
builds the providers around the SDK's own OTLP exporters, and can keep every export
request as OTLP JSON lines: the fixtures under tests/fixtures/otlp/ were recorded so
(`WORKBENCH_RECORD_OTLP=1 pytest tests/interop/test_producers.py`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.interop.test_openinference import ANSWER, ASK_TOOL, TASK, TOOLS

SYSTEM = "Answer with the tools."
FIXTURES = Path(__file__).parents[1] / "fixtures" / "otlp"
Producer = Callable[[str, Any, Any], None]
__all__ = ["ANSWER", "ASK_TOOL", "FIXTURES", "PRODUCERS", "SYSTEM", "TASK", "TOOLS", "export_to"]


def _chat_loop(client: Any) -> str:
    """An application's own loop over chat completions, running `count_lines` itself."""
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    for _ in range(3):
        response = client.chat.completions.create(
            model="local-model", messages=messages, tools=TOOLS, temperature=0
        )
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return str(message.content or "")
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "3"})
    raise AssertionError("the model never answered")


def genai_latest(base_url: str, tracer_provider: Any, logger_provider: Any) -> None:
    """opentelemetry-instrumentation-openai-v2 with the latest conventions: messages as
    `gen_ai.input.messages` / `gen_ai.output.messages` span attributes."""
    _openai_v2(base_url, tracer_provider, logger_provider, "SPAN_ONLY")


def genai_latest_events(base_url: str, tracer_provider: Any, logger_provider: Any) -> None:
    """The same with the messages on a `gen_ai.client.inference.operation.details` log
    event of each call instead of its span."""
    _openai_v2(base_url, tracer_provider, logger_provider, "EVENT_ONLY")


def _openai_v2(base_url: str, tracer_provider: Any, logger_provider: Any, capture: str) -> None:
    import openai
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = capture
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        tracer = tracer_provider.get_tracer("notes-agent")
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "notes"}
        with tracer.start_as_current_span("invoke_agent notes", attributes=attributes):
            _chat_loop(openai.OpenAI(base_url=base_url, api_key="sk-test-not-real"))
    finally:
        instrumentor.uninstrument()
        os.environ.pop("OTEL_SEMCONV_STABILITY_OPT_IN", None)
        os.environ.pop("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None)


def _openllmetry(base_url: str, tracer_provider: Any, logger_provider: Any, legacy: bool) -> None:
    import openai
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    instrumentor = OpenAIInstrumentor(use_legacy_attributes=legacy)
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        tracer = tracer_provider.get_tracer("notes-agent")
        # What traceloop-sdk's @workflow decorator writes.
        attributes = {"traceloop.span.kind": "workflow", "traceloop.entity.name": "notes"}
        with tracer.start_as_current_span("notes.workflow", attributes=attributes):
            _chat_loop(openai.OpenAI(base_url=base_url, api_key="sk-test-not-real"))
    finally:
        instrumentor.uninstrument()


def openllmetry(base_url: str, tracer_provider: Any, logger_provider: Any) -> None:
    """OpenLLMetry's opentelemetry-instrumentation-openai: `llm.request.type`,
    `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`, `llm.request.functions.N.*`."""
    _openllmetry(base_url, tracer_provider, logger_provider, legacy=True)


def genai_events(base_url: str, tracer_provider: Any, logger_provider: Any) -> None:
    """The conventions' first form, one log event per message (`gen_ai.user.message`,
    `gen_ai.choice` …), as OpenLLMetry writes them when not told to use attributes."""
    _openllmetry(base_url, tracer_provider, logger_provider, legacy=False)


def pydantic_ai(base_url: str, tracer_provider: Any, logger_provider: Any) -> None:
    """pydantic-ai's own instrumentation (what Logfire shows), its current format."""
    _pydantic_ai(base_url, tracer_provider, None)


def pydantic_ai_v2(base_url: str, tracer_provider: Any, logger_provider: Any) -> None:
    """pydantic-ai's format version 2 (`tool_arguments` / `tool_response` on its tool
    spans), which older pydantic-ai and Logfire releases write."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the version is deprecated, not gone
        _pydantic_ai(base_url, tracer_provider, 2)


def _pydantic_ai(base_url: str, tracer_provider: Any, version: int | None) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=base_url, api_key="sk-test-not-real")
    agent = Agent(OpenAIChatModel("local-model", provider=provider), system_prompt=SYSTEM)
    options: dict[str, Any] = {} if version is None else {"version": version}
    agent.instrument = InstrumentationSettings(tracer_provider=tracer_provider, **options)

    @agent.tool_plain
    def count_lines(path: str) -> int:
        """Count the lines of a text file."""
        return 3

    assert agent.run_sync(TASK).output == "notes.txt has 3 lines."


def openai_agents(base_url: str, tracer_provider: Any, logger_provider: Any) -> None:
    """The OpenAI Agents SDK (Responses API), its traces through OpenInference's
    processor (openinference-instrumentation-openai-agents)."""
    import openai
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)
    # The SDK's tracing is one global switch, which other tests turn off (their runs would
    # export to the network); on for this run only, off again after.
    set_tracing_disabled(False)
    try:

        @function_tool
        def count_lines(path: str) -> int:
            """Count the lines of a text file."""
            return 3

        client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-test-not-real")
        agent = Agent(
            name="notes agent",
            instructions=SYSTEM,
            tools=[count_lines],
            model=OpenAIResponsesModel("local-model", client),
        )
        assert Runner.run_sync(agent, TASK).final_output == "notes.txt has 3 lines."
    finally:
        set_tracing_disabled(True)
        instrumentor.uninstrument()


# name -> (the module the producer needs, the producer)
PRODUCERS: dict[str, tuple[str, Producer]] = {
    "genai-latest": ("opentelemetry.instrumentation.openai_v2", genai_latest),
    "genai-latest-events": ("opentelemetry.instrumentation.openai_v2", genai_latest_events),
    "openllmetry": ("opentelemetry.instrumentation.openai", openllmetry),
    "genai-events": ("opentelemetry.instrumentation.openai", genai_events),
    "pydantic-ai": ("pydantic_ai", pydantic_ai),
    "pydantic-ai-v2": ("pydantic_ai", pydantic_ai_v2),
    "openai-agents": ("openinference.instrumentation.openai_agents", openai_agents),
}


def producer(name: str) -> Producer:
    module, run = PRODUCERS[name]
    pytest.importorskip(module, reason=f"needs {module} (pip install -e '.[otel-producers]')")
    return run


def _hex_ids(node: Any) -> Any:
    # protobuf's JSON mapping writes ids as base64; OTLP JSON writes them as hex.
    import base64

    if isinstance(node, dict):
        return {
            key: base64.b64decode(value).hex()
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str)
            else _hex_ids(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(item) for item in node]
    return node


class _Keeping:
    """Wraps an OTLP exporter: exports as it does, and keeps each request as OTLP JSON."""

    def __init__(self, exporter: Any, encode: Callable[[Any], Any], kept: list[str]) -> None:
        self.exporter, self.encode, self.kept = exporter, encode, kept

    def export(self, batch: Sequence[Any]) -> Any:
        from google.protobuf import json_format

        self.kept.append(json.dumps(_hex_ids(json_format.MessageToDict(self.encode(batch)))))
        return self.exporter.export(batch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.exporter, name)


@contextmanager
def export_to(endpoint: str, kept: list[str] | None = None) -> Iterator[tuple[Any, Any]]:
    """A tracer provider and a logger provider sending to the OTLP/HTTP `endpoint` (a
    base URL: /v1/traces and /v1/logs are added), one request per span or record as
    they end; with `kept`, each request is also appended to it as a line of OTLP JSON."""
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    resource = Resource.create({"service.name": "notes-agent"})
    spans: Any = OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")
    logs: Any = OTLPLogExporter(endpoint=f"{endpoint}/v1/logs")
    if kept is not None:
        spans, logs = _Keeping(spans, encode_spans, kept), _Keeping(logs, encode_logs, kept)
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    try:
        yield tracer_provider, logger_provider
        logger_provider.force_flush()
        tracer_provider.force_flush()
    finally:
        logger_provider.shutdown()
        tracer_provider.shutdown()
