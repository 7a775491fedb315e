"""OpenTelemetry spans from other agents as runs in the trace contract.

An OTLP export request (protobuf, or OTLP JSON) is read into plain `SpanRecord`s; the spans
of one trace become one run. GenAI semantic-convention and OpenInference spans are
recognised: an LLM / `chat` span is a model call (a turn), a TOOL / `execute_tool` span a
tool call, an AGENT / `invoke_agent` span (else the trace's root) the run itself. A tool
call the client ran without a span of its own is recovered from the messages: the model
asked for it in one call and its result came back in the next call's input; such a call
is `observed`. The run is written as `<home>/traces/<trace id>.jsonl` with
`run_start.origin = "imported"` and `client` naming the instrumentation library; importing
the same trace again writes nothing.

Needs the `otel` extra (`opentelemetry-proto`); imported only by the commands that use it.
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from pydantic import ValidationError

from traces.events import (
    Error,
    Event,
    ModelRequest,
    ModelResponse,
    RunEnd,
    RunStart,
    RunStatus,
    ToolEnd,
    ToolStart,
    Totals,
)
from traces.home import traces_dir
from traces.reader import describe_validation_error
from traces.writer import JsonlWriter
from workbench.engine import otel_attrs as a

_STATUS_ERROR = 2  # opentelemetry.proto.trace.v1.Status.STATUS_CODE_ERROR
_RUN_STATUSES = frozenset(get_args(RunStatus))


class OtlpError(ValueError):
    """The payload is not an OTLP trace export; one line saying why."""


@dataclass
class SpanRecord:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    error: bool = False
    status_message: str = ""
    scope: str = ""
    service: str | None = None

    @property
    def kind(self) -> str:
        """LLM, TOOL, AGENT or OTHER, from either vocabulary."""
        oi = str(self.attributes.get(a.SPAN_KIND, "")).upper()
        operation = self.attributes.get(a.OPERATION)
        if oi == "LLM" or operation in ("chat", "text_completion", "generate_content"):
            return "LLM"
        if oi == "TOOL" or operation == "execute_tool":
            return "TOOL"
        if oi == "AGENT" or operation in ("invoke_agent", "create_agent"):
            return "AGENT"
        return "OTHER"

    def get(self, *keys: str) -> Any:
        for key in keys:
            value = self.attributes.get(key)
            if value is not None:
                return value
        return None


# --- reading OTLP ---------------------------------------------------------------------


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind) if kind else None


def spans_of_request(request: ExportTraceServiceRequest) -> list[SpanRecord]:
    spans: list[SpanRecord] = []
    for resource_spans in request.resource_spans:
        resource = {kv.key: _value(kv.value) for kv in resource_spans.resource.attributes}
        service = resource.get("service.name")
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            if scope_spans.scope.version:
                scope = f"{scope} {scope_spans.scope.version}"
            for span in scope_spans.spans:
                spans.append(
                    SpanRecord(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex() or None,
                        name=span.name,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        attributes={kv.key: _value(kv.value) for kv in span.attributes},
                        error=span.status.code == _STATUS_ERROR,
                        status_message=span.status.message,
                        scope=scope,
                        service=service if isinstance(service, str) else None,
                    )
                )
    return spans


def parse_protobuf(data: bytes) -> list[SpanRecord]:
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(data)
    except DecodeError as exc:
        raise OtlpError(f"not an OTLP protobuf trace export ({exc})") from None
    return spans_of_request(request)


_ID_KEYS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


def _ids_to_base64(node: Any) -> Any:
    # OTLP JSON writes ids as hex; protobuf's JSON mapping expects bytes as base64.
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                try:
                    value = base64.b64encode(bytes.fromhex(value)).decode()
                except ValueError:
                    raise OtlpError(f"{key} {value!r} is not a hex id") from None
            out[key] = _ids_to_base64(value)
        return out
    if isinstance(node, list):
        return [_ids_to_base64(item) for item in node]
    return node


def parse_json(document: Any) -> list[SpanRecord]:
    if not isinstance(document, dict) or not (
        "resourceSpans" in document or "resource_spans" in document
    ):
        raise OtlpError("not an OTLP JSON trace export (no resourceSpans)")
    request = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(_ids_to_base64(document), request, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise OtlpError(f"not an OTLP JSON trace export ({str(exc).splitlines()[0]})") from None
    return spans_of_request(request)


def read_json_file(path: Path) -> list[SpanRecord]:
    """An OTLP JSON file: one export request, or one per line (the collector's file
    exporter writes JSON Lines). Problems name the file and line."""
    text = path.read_text(encoding="utf-8")
    try:
        return parse_json(json.loads(text))
    except json.JSONDecodeError:
        pass
    except OtlpError as exc:
        raise OtlpError(f"{path}: {exc}") from None
    spans: list[SpanRecord] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            spans += parse_json(json.loads(line))
        except json.JSONDecodeError:
            raise OtlpError(f"{path}:{number}: not valid JSON") from None
        except OtlpError as exc:
            raise OtlpError(f"{path}:{number}: {exc}") from None
    return spans


# --- spans to a run -------------------------------------------------------------------


def _ts(ns: int) -> datetime:
    return datetime.fromtimestamp(ns // 1000 / 1_000_000, UTC)


def _json_value(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _input_messages(span: SpanRecord) -> list[dict[str, Any]]:
    messages = a.unflatten_messages(a.LLM_INPUT, span.attributes)
    if messages:
        return messages
    semconv = _json_value(span.attributes.get(a.INPUT_MESSAGES))
    if isinstance(semconv, list):
        messages = [a.from_semconv(m) for m in semconv if isinstance(m, dict)]
    system = _json_value(span.attributes.get(a.SYSTEM_INSTRUCTIONS))
    if isinstance(system, list) and not any(m["role"] == "system" for m in messages):
        text = "".join(str(p.get("content", "")) for p in system if isinstance(p, dict))
        messages.insert(0, {"role": "system", "content": text})
    return messages


def _output_message(span: SpanRecord) -> tuple[dict[str, Any] | None, str | None]:
    """The assistant message the model answered, and the finish reason."""
    reasons = span.attributes.get(a.FINISH_REASONS)
    finish = reasons[0] if isinstance(reasons, list) and reasons else None
    finish = finish or span.attributes.get("llm.finish_reason")
    messages = a.unflatten_messages(a.LLM_OUTPUT, span.attributes)
    if messages:
        message = messages[0]
    else:
        semconv = _json_value(span.attributes.get(a.OUTPUT_MESSAGES))
        if not (isinstance(semconv, list) and semconv and isinstance(semconv[0], dict)):
            return None, finish
        message = a.from_semconv(semconv[0])
        finish = finish or semconv[0].get("finish_reason")
    message["role"] = "assistant"
    message.setdefault("content", None)
    if finish is None:
        finish = "tool_calls" if message.get("tool_calls") else "stop"
    return message, finish


def _tools(span: SpanRecord) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for i in range(10_000):
        schema = span.attributes.get(f"{a.LLM_TOOLS}.{i}.tool.json_schema")
        if schema is None:
            break
        value = _json_value(schema)
        if isinstance(value, dict):
            tools.append(value)
    if tools:
        return tools
    definitions = _json_value(span.attributes.get(a.TOOL_DEFINITIONS))
    if isinstance(definitions, list):
        for item in definitions:
            if isinstance(item, dict) and "function" in item:
                tools.append(item)
            elif isinstance(item, dict):  # the conventions' flat form: type, name, …
                function = {k: v for k, v in item.items() if k != "type"}
                tools.append({"type": "function", "function": function})
    return tools


def _params(span: SpanRecord) -> dict[str, Any]:
    params = _json_value(span.attributes.get(a.LLM_PARAMS))
    if not isinstance(params, dict):
        params = {
            key: span.attributes[attr]
            for key, attr in a.REQUEST_PARAMS.items()
            if attr in span.attributes
        }
    return {k: v for k, v in params.items() if k not in ("model", "stream", "stream_options")}


@dataclass
class _Timeline:
    """Events to be, ordered by time; at equal times the span that started first goes
    first, and a span's start before its end."""

    items: list[tuple[int, int, int, int, dict[str, Any]]] = field(default_factory=list)

    def add(self, at_ns: int, span: SpanRecord, phase: int, event: dict[str, Any]) -> None:
        order = _int(span.attributes.get(a.SEQ)) or 0
        event["ts"] = _ts(at_ns)
        self.items.append((at_ns, span.start_ns, order * 4 + phase, len(self.items), event))

    def sorted(self) -> list[dict[str, Any]]:
        return [item[-1] for item in sorted(self.items, key=lambda item: item[:4])]


def _client(spans: list[SpanRecord]) -> str | None:
    for span in spans:
        if span.kind == "LLM" and span.scope:
            return span.scope
    return next((span.scope for span in spans if span.scope), None)


def _agent_span(spans: list[SpanRecord]) -> SpanRecord | None:
    agents = [span for span in spans if span.kind == "AGENT"]
    if agents:
        return min(agents, key=lambda span: span.start_ns)
    ids = {span.span_id for span in spans}
    roots = [s for s in spans if s.parent_id not in ids and s.kind == "OTHER"]
    return min(roots, key=lambda span: span.start_ns) if roots else None


def run_events(spans: list[SpanRecord]) -> list[Event]:
    """One trace's spans as one run's events, in the trace contract."""
    run_id = spans[0].trace_id
    llms = sorted((s for s in spans if s.kind == "LLM"), key=lambda s: (s.start_ns, s.name))
    tools = sorted((s for s in spans if s.kind == "TOOL"), key=lambda s: s.start_ns)
    agent = _agent_span(spans)
    timeline = _Timeline()

    # Turns: the exporter's own numbering when present, else one per model call.
    turns: list[tuple[SpanRecord, int]] = []
    for number, span in enumerate(llms, 1):
        turns.append((span, _int(span.attributes.get(a.TURN)) or number))

    def turn_at(ns: int) -> int:
        current = 1
        for span, turn in turns:
            if span.start_ns <= ns:
                current = turn
        return current

    model_calls = tool_calls = tool_errors = input_tokens = output_tokens = 0
    answered: dict[str, dict[str, Any]] = {}  # call id -> tool call the model asked for
    asked_at: dict[str, tuple[int, int]] = {}  # call id -> (time asked, turn)
    for span, turn in turns:
        messages = _input_messages(span)
        timeline.add(
            span.start_ns,
            span,
            0,
            {
                "type": "model_request",
                "turn": turn,
                "attempt": _int(span.attributes.get(a.ATTEMPT)) or 1,
                "messages": messages,
                "tools": _tools(span),
                "params": _params(span),
            },
        )
        for message in messages:
            if message.get("role") == "tool" and message.get("tool_call_id") in asked_at:
                answered[str(message["tool_call_id"])] = message | {"_seen_ns": span.start_ns}
        message, finish = _output_message(span)
        if message is None and not span.error and a.ATTEMPT not in span.attributes:
            # Instrumentation that leaves message content out still saw the call end.
            message = {"role": "assistant", "content": None}
        prompt = _int(span.get(a.LLM_PROMPT_TOKENS, a.INPUT_TOKENS))
        completion = _int(span.get(a.LLM_COMPLETION_TOKENS, a.OUTPUT_TOKENS))
        if message is None and not span.error:
            pass  # the workbench exported a call that never answered: it stays open
        elif message is not None and not span.error:
            model_calls += 1
            usage = None
            if prompt is not None or completion is not None:
                total = _int(span.attributes.get(a.LLM_TOTAL_TOKENS))
                total = total if total is not None else (prompt or 0) + (completion or 0)
                usage = {
                    "prompt_tokens": prompt or 0,
                    "completion_tokens": completion or 0,
                    "total_tokens": total,
                }
                input_tokens += prompt or 0
                output_tokens += completion or 0
            timeline.add(
                span.end_ns,
                span,
                1,
                {
                    "type": "model_response",
                    "turn": turn,
                    "attempt": _int(span.attributes.get(a.ATTEMPT)) or 1,
                    "message": message,
                    "finish_reason": finish,
                    "usage": usage,
                    "latency_ms": (span.end_ns - span.start_ns) / 1e6,
                },
            )
            for call in message.get("tool_calls") or []:
                if call.get("id"):
                    asked_at[str(call["id"])] = (span.end_ns, turn)
        else:
            timeline.add(
                span.end_ns,
                span,
                1,
                {
                    "type": "error",
                    "turn": turn,
                    "where": "model",
                    "kind": str(span.attributes.get(a.ERROR_TYPE) or "error"),
                    "message": span.status_message or "the model call failed",
                    "attempt": _int(span.attributes.get(a.ATTEMPT)) or 1,
                },
            )

    spanned: set[str] = set()
    for span in tools:
        call_id = str(span.get(a.TOOL_CALL_ID, a.OI_TOOL_CALL_ID) or span.span_id)
        spanned.add(call_id)
        name = str(span.get(a.TOOL_NAME, a.OI_TOOL_NAME) or span.name)
        raw = span.get(a.TOOL_ARGUMENTS, a.INPUT_VALUE)
        raw = raw if isinstance(raw, str) else json.dumps(raw if raw is not None else {})
        arguments = _json_value(raw)
        turn = _int(span.attributes.get(a.TURN)) or turn_at(span.start_ns)
        timeline.add(
            span.start_ns,
            span,
            0,
            {
                "type": "tool_start",
                "turn": turn,
                "call_id": call_id,
                "name": name,
                "arguments_raw": raw,
                "arguments": arguments if isinstance(arguments, dict) else None,
                "parse_error": None if isinstance(arguments, dict) else "not a JSON object",
                "source": str(span.attributes.get(a.TOOL_SOURCE) or "imported"),
            },
        )
        result = span.get(a.TOOL_RESULT, a.OUTPUT_VALUE)
        tool_calls += 1
        tool_errors += span.error
        timeline.add(
            span.end_ns,
            span,
            1,
            {
                "type": "tool_end",
                "turn": turn,
                "call_id": call_id,
                "name": name,
                "ok": not span.error,
                "result": result if isinstance(result, str) else json.dumps(result or ""),
                "error": span.attributes.get(a.TOOL_ERROR)
                or (span.status_message or "the tool failed" if span.error else None),
                "duration_ms": (span.end_ns - span.start_ns) / 1e6,
                "mocked": bool(span.attributes.get(a.TOOL_MOCKED)),
                "replayed": bool(span.attributes.get(a.TOOL_REPLAYED)),
            },
        )

    # Calls the client ran without spans: asked for in one answer, answered in a later
    # request's messages.
    for span, turn in turns:
        message, _ = _output_message(span)
        for call in (message or {}).get("tool_calls") or []:
            call_id = str(call.get("id"))
            if call_id in spanned or call_id not in answered:
                continue
            function = call.get("function") or {}
            raw = str(function.get("arguments") or "")
            arguments = _json_value(raw)
            asked, seen = asked_at[call_id][0], answered[call_id]["_seen_ns"]
            tool_calls += 1
            timeline.add(
                asked,
                span,
                2,
                {
                    "type": "tool_start",
                    "turn": turn,
                    "call_id": call_id,
                    "name": str(function.get("name") or ""),
                    "arguments_raw": raw,
                    "arguments": arguments if isinstance(arguments, dict) else None,
                    "parse_error": None if isinstance(arguments, dict) else "not a JSON object",
                    "source": "imported",
                },
            )
            timeline.add(
                seen,
                span,
                3,
                {
                    "type": "tool_end",
                    "turn": turn,
                    "call_id": call_id,
                    "name": str(function.get("name") or ""),
                    "ok": True,
                    "result": a.text_of(answered[call_id].get("content")) or "",
                    "duration_ms": (seen - asked) / 1e6,
                    "observed": True,
                },
            )

    first = llms[0] if llms else None
    first_messages = _input_messages(first) if first else []
    user = next((m for m in first_messages if m.get("role") == "user"), None)
    system = next((m for m in first_messages if m.get("role") == "system"), None)
    task = agent.get(a.INPUT_VALUE) if agent else None
    if not isinstance(task, str):
        task = a.text_of(user.get("content")) if user else None
    model = (agent.get(a.REQUEST_MODEL, a.LLM_MODEL) if agent else None) or (
        first.get(a.REQUEST_MODEL, a.LLM_MODEL, a.RESPONSE_MODEL) if first else None
    )
    system_prompt = agent.get(a.SYSTEM_PROMPT) if agent else None
    if system_prompt is None and system is not None:
        system_prompt = a.text_of(system.get("content"))
    start_ns = min(s.start_ns for s in spans)
    end_ns = max(s.end_ns for s in spans)
    events: list[Event] = [
        RunStart(
            run_id=run_id,
            seq=0,
            ts=_ts(agent.start_ns if agent else start_ns),
            task=task or (first.name if first else spans[0].name),
            system_prompt=system_prompt,
            model=str(model or "unknown"),
            params=_params(first) if first else {},
            tools=(_tools(agent) if agent else []) or (_tools(first) if first else []),
            origin="imported",
            client=_client(spans),
            meta={
                "otel": {
                    "trace_id": run_id,
                    "service": next((s.service for s in spans if s.service), None),
                    "run_id": agent.get(a.RUN_ID) if agent else None,
                }
            },
        )
    ]
    for seq, item in enumerate(timeline.sorted(), start=1):
        events.append(_event(run_id, seq, item))
    status = _status(agent, llms)
    if status is not None:
        answer = agent.get(a.OUTPUT_VALUE) if agent else None
        last = next((e for e in reversed(events) if isinstance(e, ModelResponse)), None)
        if not isinstance(answer, str) and last is not None:
            answer = a.text_of(last.message.get("content"))
        reason = agent.get(a.RUN_REASON) if agent else None
        layer = agent.get(a.TIMEOUT_LAYER) if agent else None
        run_end = RunEnd(
            run_id=run_id,
            seq=len(events),
            ts=_ts(agent.end_ns if agent else end_ns),
            status=status,
            reason=str(reason or (agent.status_message if agent else "")),
            timeout_layer=layer if layer in ("model", "tool", "run") else None,
            final_answer=answer,
            totals=Totals(
                turns=len({turn for _, turn in turns}),
                model_calls=model_calls,
                tool_calls=tool_calls,
                tool_errors=tool_errors,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                total_tokens=input_tokens + output_tokens,
                duration_ms=(end_ns - start_ns) / 1e6,
            ),
        )
        events.append(run_end)
    return events


def _status(agent: SpanRecord | None, llms: list[SpanRecord]) -> RunStatus | None:
    """The run's end status; None for a run the exporter reported as still going."""
    declared = agent.attributes.get(a.RUN_STATUS) if agent else None
    if declared == "incomplete":
        return None
    if declared in _RUN_STATUSES:
        status: RunStatus = declared
        return status
    last = agent or (llms[-1] if llms else None)
    return "error" if last is not None and last.error else "completed"


_EVENT_TYPES: dict[str, Any] = {
    "model_request": ModelRequest,
    "model_response": ModelResponse,
    "error": Error,
    "tool_start": ToolStart,
    "tool_end": ToolEnd,
}


def _event(run_id: str, seq: int, item: dict[str, Any]) -> Event:
    kind = _EVENT_TYPES[item.pop("type")]
    event: Event = kind(run_id=run_id, seq=seq, **item)
    return event


@dataclass
class ImportedRun:
    run_id: str
    status: str
    turns: int
    path: Path
    written: bool  # False: this trace was imported before


def group_traces(spans: Iterable[SpanRecord]) -> dict[str, list[SpanRecord]]:
    traces: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in spans:
        traces[span.trace_id].append(span)
    return dict(traces)


def write_run(home: Path, spans: list[SpanRecord]) -> ImportedRun | None:
    """Write one trace's spans as a run under `home`; None when they hold no model call
    and no tool call (a trace of something else)."""
    if not any(span.kind in ("LLM", "TOOL") for span in spans):
        return None
    try:
        events = run_events(spans)
    except ValidationError as exc:
        raise OtlpError(
            f"trace {spans[0].trace_id}: its spans do not make a run "
            f"({describe_validation_error(exc)})"
        ) from None
    run_id = events[0].run_id
    folder = traces_dir(home)
    path = folder / f"{run_id}.jsonl"
    end = events[-1]
    status = end.status if isinstance(end, RunEnd) else "incomplete"
    turns = len({e.turn for e in events if e.turn is not None})
    if path.exists():
        return ImportedRun(run_id, status, turns, path, written=False)
    writer = JsonlWriter(folder, run_id)
    try:
        for event in events:
            writer.write(event)
    finally:
        writer.close()
    return ImportedRun(run_id, status, turns, path, written=True)
