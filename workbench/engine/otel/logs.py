"""OTLP log records and metrics: what of them becomes part of a run, and counting the rest.

A log record that names its span (the GenAI instrumentations write message content as log
events: `gen_ai.user.message`, `gen_ai.choice`, `gen_ai.client.inference.operation.details`)
waits with the spans of its trace and is folded into its span as an event, where `dialects`
reads it. Claude Code's events (`claude_code.user_prompt`, `api_request`, `api_error`,
`tool_result`, `tool_decision`, `assistant_response`, sent when its telemetry is on) carry
no trace: a prompt's records (`prompt.id`; a session's, `session.id`, where they name no
prompt) are one run, each API request a model call (its model, tokens and time; of the
messages, the prompt when `OTEL_LOG_USER_PROMPTS=1` and the answer's text), each tool
result a tool call (its name, input, outcome and time; not its output, which Claude Code
does not send); a new prompt of the session ends the ones before it. Other records are
accepted and counted. Metrics are accepted and their points counted.

Log records travel as `SpanRecord`s with `signal="log"`, so they wait, spool and expire as
spans do (`collect`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from workbench.engine.otel import attrs as a
from workbench.engine.otel.dialects import EVENT_BODY, READ_EVENTS
from workbench.engine.otel.otlp import any_value, read_json, read_protobuf
from workbench.engine.otel.spans import SpanEventRecord, SpanRecord

# The parent a Claude Code record waits under: no span of the trace has it, so the trace
# waits (there is no root span) until the session goes quiet or the receiver stops.
SESSION_PARENT = "c1a0de5e55100000"
_CLAUDE_PREFIX = "claude_code."


@dataclass
class LogBatch:
    records: list[SpanRecord]  # the records kept for runs
    received: int  # every record of the request


def _event_name(record: Any, attributes: dict[str, Any], body: Any) -> str:
    if record.event_name:
        return str(record.event_name)
    name = attributes.get("event.name")
    if isinstance(name, str) and name:
        # Claude Code names its events in the body ("claude_code.tool_result") and
        # `event.name` ("tool_result").
        if isinstance(body, str) and body.startswith(_CLAUDE_PREFIX):
            return body
        return name
    return body if isinstance(body, str) and body.startswith(_CLAUDE_PREFIX) else ""


def session_trace_id(session: str, prompt: str | None = None) -> str:
    """The trace a Claude Code prompt's records (those of its session, when they name no
    prompt) are gathered into."""
    key = f"claude-code-session:{session}" + (f":{prompt}" if prompt else "")
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def starts_a_prompt(record: SpanRecord) -> str | None:
    """The session of a Claude Code record that starts a prompt, else None: the prompts
    before it in its session are done."""
    if record.parent_id == SESSION_PARENT and record.name == _CLAUDE_PREFIX + "user_prompt":
        session = record.attributes.get(a.SESSION_ID)
        return str(session) if session else None
    return None


def records_of_request(request: ExportLogsServiceRequest) -> LogBatch:
    records: list[SpanRecord] = []
    received = 0
    for resource_logs in request.resource_logs:
        resource = {kv.key: any_value(kv.value) for kv in resource_logs.resource.attributes}
        service = resource.get("service.name")
        for scope_logs in resource_logs.scope_logs:
            scope = scope_logs.scope.name
            if scope_logs.scope.version:
                scope = f"{scope} {scope_logs.scope.version}"
            for n, record in enumerate(scope_logs.log_records):
                received += 1
                attributes = {kv.key: any_value(kv.value) for kv in record.attributes}
                body = any_value(record.body) if record.HasField("body") else None
                name = _event_name(record, attributes, body)
                at = record.time_unix_nano or record.observed_time_unix_nano
                if len(record.trace_id) == 16 and len(record.span_id) == 8:
                    trace, parent = record.trace_id.hex(), record.span_id.hex()
                elif name.startswith(_CLAUDE_PREFIX) and attributes.get(a.SESSION_ID):
                    prompt = attributes.get("prompt.id")
                    session = str(attributes[a.SESSION_ID])
                    trace = session_trace_id(session, str(prompt) if prompt else None)
                    parent = SESSION_PARENT
                else:
                    continue  # nothing to join it to: counted, not kept
                if body is not None:
                    attributes[EVENT_BODY] = body
                key = f"{trace}:{parent}:{at}:{n}:{name}"
                records.append(
                    SpanRecord(
                        trace_id=trace,
                        span_id=hashlib.sha256(key.encode()).hexdigest()[:16],
                        parent_id=parent,
                        name=name,
                        start_ns=at,
                        end_ns=at,
                        attributes=attributes,
                        scope=scope,
                        service=service if isinstance(service, str) else None,
                        signal="log",
                    )
                )
    return LogBatch(records, received)


def parse_logs_protobuf(data: bytes) -> LogBatch:
    return records_of_request(read_protobuf(ExportLogsServiceRequest(), data, "logs"))


def parse_logs_json(document: Any) -> LogBatch:
    request = read_json(ExportLogsServiceRequest(), document, "resourceLogs", "logs")
    return records_of_request(request)


def _points(request: ExportMetricsServiceRequest) -> int:
    points = 0
    for resource_metrics in request.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                if kind is not None:
                    points += len(getattr(metric, kind).data_points)
    return points


def metric_points_protobuf(data: bytes) -> int:
    """How many data points an OTLP protobuf metrics export holds."""
    return _points(read_protobuf(ExportMetricsServiceRequest(), data, "metrics"))


def metric_points_json(document: Any) -> int:
    request = read_json(ExportMetricsServiceRequest(), document, "resourceMetrics", "metrics")
    return _points(request)


# --- folding records into a trace's spans ------------------------------------------------


@dataclass
class Folded:
    spans: list[SpanRecord]
    logs: int  # log records of the trace
    unused_logs: int  # of them, those no part of the run reads


def fold_logs(spans: list[SpanRecord]) -> Folded:
    """The trace's spans with its log records folded in: as events of the span they name,
    or, for a Claude Code session, as the spans they stand for."""
    records = [s for s in spans if s.signal == "log"]
    if not records:
        return Folded(spans, 0, 0)
    kept = [s for s in spans if s.signal != "log"]
    by_id = {span.span_id: span for span in kept}
    unused = 0
    claude: list[SpanRecord] = []
    for record in sorted(records, key=lambda r: r.start_ns):
        if record.parent_id in by_id:
            span = by_id[record.parent_id]
            span.events.append(SpanEventRecord(record.name, record.start_ns, record.attributes))
            unused += record.name not in READ_EVENTS
        elif record.parent_id == SESSION_PARENT:
            claude.append(record)
        else:
            unused += 1
    if claude:
        made, skipped = claude_code_spans(claude)
        kept += made
        unused += skipped
    return Folded(kept, len(records), unused)


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _span(record: SpanRecord, name: str, attributes: dict[str, Any]) -> SpanRecord:
    duration = _number(record.attributes.get("duration_ms")) or 0.0
    start = record.start_ns - int(duration * 1e6)
    return SpanRecord(
        trace_id=record.trace_id,
        span_id=record.span_id,
        parent_id=None,  # set to the session's span below
        name=name,
        start_ns=start,
        end_ns=record.start_ns,
        attributes=attributes,
        scope=record.scope,
        service=record.service,
    )


def _order(record: SpanRecord) -> tuple[float, int]:
    # Claude Code numbers its events; a model call's event comes once its answer has, after
    # the decisions on the tools it asked for.
    sequence = _number(record.attributes.get("event.sequence"))
    return sequence if sequence is not None else float("inf"), record.start_ns


def _answer(span: SpanRecord, parts: list[dict[str, Any]]) -> None:
    """Add parts to the answer of a model call made from Claude Code's events."""
    kept = json.loads(span.attributes.get(a.OUTPUT_MESSAGES) or "[]") or [
        {"role": "assistant", "parts": []}
    ]
    kept[0]["parts"] += parts
    span.attributes[a.OUTPUT_MESSAGES] = json.dumps(kept)


def claude_code_spans(records: list[SpanRecord]) -> tuple[list[SpanRecord], int]:
    """A Claude Code session's event records as the spans of one run: a session span,
    a model call per API request (or error), a tool call per tool result. The tool calls
    a model call asked for (by `tool_use_id`) and the text it answered
    (`assistant_response`) are its answer. Returns the spans and how many records were
    not turned into any."""
    spans: list[SpanRecord] = []
    prompts: list[str] = []
    first_prompt: str | None = None
    last_call: SpanRecord | None = None
    unused = 0
    for record in sorted(records, key=_order):
        name = record.name.removeprefix(_CLAUDE_PREFIX)
        attributes = record.attributes
        if name == "user_prompt":
            prompt = attributes.get("prompt")
            if not isinstance(prompt, str):  # OTEL_LOG_USER_PROMPTS is off: its length only
                prompt = f"(a prompt of {attributes.get('prompt_length', '?')} characters)"
            prompts.append(prompt)
            first_prompt = first_prompt or prompt
        elif name in ("api_request", "api_error"):
            call: dict[str, Any] = {a.OPERATION: "chat"}
            if attributes.get("model"):
                call[a.REQUEST_MODEL] = str(attributes["model"])
            for key, attr in (("input_tokens", a.INPUT_TOKENS), ("output_tokens", a.OUTPUT_TOKENS)):
                tokens = _number(attributes.get(key))
                if tokens is not None:
                    call[attr] = int(tokens)
            if prompts:
                parts = [{"type": "text", "content": text} for text in prompts]
                call[a.INPUT_MESSAGES] = json.dumps([{"role": "user", "parts": parts}])
                prompts = []
            span = _span(record, f"claude_code.{name}", call)
            if name == "api_error":
                span.error = True
                span.status_message = str(attributes.get("error") or "the API request failed")
                span.attributes[a.ERROR_TYPE] = str(attributes.get("status_code") or "error")
            spans.append(span)
            last_call = span
        elif name == "assistant_response" and last_call is not None:
            text = attributes.get("response")
            if isinstance(text, str):
                _answer(last_call, [{"type": "text", "content": text}])
        elif name == "tool_result":
            tool = str(attributes.get("tool_name") or "tool")
            arguments = attributes.get("tool_input", attributes.get("tool_parameters"))
            arguments = arguments if isinstance(arguments, str) else "{}"
            call = {
                a.OPERATION: "execute_tool",
                a.TOOL_NAME: tool,
                a.TOOL_ARGUMENTS: arguments,
                a.TOOL_RESULT: "",  # Claude Code sends a tool's output size, not the output
            }
            call_id = attributes.get("tool_use_id")
            if call_id:
                call[a.TOOL_CALL_ID] = str(call_id)
                if last_call is not None:
                    part = {"type": "tool_call", "id": str(call_id), "name": tool}
                    _answer(last_call, [part | {"arguments": json_value_or_text(arguments)}])
            span = _span(record, f"claude_code.tool_result {tool}", call)
            if str(attributes.get("success", "true")).lower() != "true":
                span.error = True
                span.status_message = str(attributes.get("error") or "the tool failed")
                span.attributes[a.TOOL_ERROR] = span.status_message
            spans.append(span)
        else:  # tool_decision (its outcome is in the tool_result), raw bodies, others
            unused += 1
    if not spans:
        return [], unused
    first = min(records, key=lambda r: r.start_ns)
    session = SpanRecord(
        trace_id=first.trace_id,
        span_id=hashlib.sha256(f"{first.trace_id}:session".encode()).hexdigest()[:16],
        parent_id=None,
        name="claude_code session",
        start_ns=min(span.start_ns for span in spans),
        end_ns=max(span.end_ns for span in spans),
        attributes={
            a.OPERATION: "invoke_agent",
            a.AGENT_NAME: "claude-code",
            **({a.INPUT_VALUE: first_prompt} if first_prompt else {}),
        },
        scope=first.scope,
        service=first.service,
    )
    for span in spans:
        span.parent_id = session.span_id
    return [session, *spans], unused


def json_value_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
