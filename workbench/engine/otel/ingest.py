"""OpenTelemetry spans from other agents as runs: OTLP in, trace files out.

An OTLP export request (protobuf, or OTLP JSON) is read into plain `SpanRecord`s; the spans
of one trace become one run (`runs` says how), written as
`<home>/traces/<trace id>.jsonl`. Importing the same trace again writes nothing.

Needs the `otel` extra (`opentelemetry-proto`); imported only by the commands that use it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from pydantic import ValidationError

from traces.reader import describe_validation_error
from workbench.engine.otel.logs import fold_logs, metric_points_json, parse_logs_json
from workbench.engine.otel.otlp import TOO_DEEP, any_value, read_json, read_protobuf
from workbench.engine.otel.otlp import OtlpError as OtlpError
from workbench.engine.otel.otlp import loads as loads
from workbench.engine.otel.runs import run_events
from workbench.engine.otel.spans import SpanEventRecord, SpanRecord

# Re-exported: the collector names the runs it writes by it.
from workbench.engine.recording.runs.imported import ImportedRun as ImportedRun
from workbench.engine.recording.runs.imported import write_imported

_STATUS_ERROR = 2  # opentelemetry.proto.trace.v1.Status.STATUS_CODE_ERROR


# OTLP ids: a trace id is 16 bytes, a span id 8 (a root span's parent id is empty). Checked
# because a trace id names the run's file, and one of 200 bytes names none.
_ID_BYTES = {"traceId": (16,), "spanId": (8,), "parentSpanId": (0, 8)}


def _check_ids(span: Any) -> None:
    for name, value in (
        ("traceId", span.trace_id),
        ("spanId", span.span_id),
        ("parentSpanId", span.parent_span_id),
    ):
        if len(value) not in _ID_BYTES[name]:
            raise OtlpError(
                f"span {span.name[:60]!r}: {name} is {len(value)} bytes; OTLP's is "
                f"{_ID_BYTES[name][-1]} ({2 * _ID_BYTES[name][-1]} hex digits)"
            )


def spans_of_request(request: ExportTraceServiceRequest) -> list[SpanRecord]:
    """The request's spans; OtlpError for a span whose ids are not OTLP's sizes."""
    spans: list[SpanRecord] = []
    for resource_spans in request.resource_spans:
        resource = {kv.key: any_value(kv.value) for kv in resource_spans.resource.attributes}
        service = resource.get("service.name")
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope.name
            if scope_spans.scope.version:
                scope = f"{scope} {scope_spans.scope.version}"
            for span in scope_spans.spans:
                _check_ids(span)
                spans.append(
                    SpanRecord(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex() or None,
                        name=span.name,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        attributes={kv.key: any_value(kv.value) for kv in span.attributes},
                        error=span.status.code == _STATUS_ERROR,
                        status_message=span.status.message,
                        scope=scope,
                        service=service if isinstance(service, str) else None,
                        events=[
                            SpanEventRecord(
                                event.name,
                                event.time_unix_nano,
                                {kv.key: any_value(kv.value) for kv in event.attributes},
                            )
                            for event in span.events
                        ],
                    )
                )
    return spans


def parse_protobuf(data: bytes) -> list[SpanRecord]:
    return spans_of_request(read_protobuf(ExportTraceServiceRequest(), data, "trace"))


def parse_json(document: Any) -> list[SpanRecord]:
    request = read_json(ExportTraceServiceRequest(), document, "resourceSpans", "trace")
    return spans_of_request(request)


def parse_any_json(document: Any) -> list[SpanRecord]:
    """The spans, or the log records kept for runs, of one OTLP JSON export (traces, logs,
    or metrics, which hold neither)."""
    if isinstance(document, dict) and ("resourceLogs" in document or "resource_logs" in document):
        return parse_logs_json(document).records
    if isinstance(document, dict) and (
        "resourceMetrics" in document or "resource_metrics" in document
    ):
        metric_points_json(document)  # checked, and nothing in it makes a run
        return []
    return parse_json(document)


def read_json_file(path: Path) -> list[SpanRecord]:
    """An OTLP JSON file: one export request, or one per line (the collector's file
    exporter writes JSON Lines), of spans, log records or metrics. Problems name the file
    and line."""
    text = path.read_text(encoding="utf-8")
    try:
        return parse_any_json(json.loads(text))
    except json.JSONDecodeError:
        pass
    except RecursionError:
        raise OtlpError(f"{path}: {TOO_DEEP}") from None
    except OtlpError as exc:
        raise OtlpError(f"{path}: {exc}") from None
    spans: list[SpanRecord] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            spans += parse_any_json(loads(line))
        except OtlpError as exc:
            raise OtlpError(f"{path}:{number}: {exc}") from None
    return spans


# --- writing runs -----------------------------------------------------------------------


@dataclass
class SkippedTrace:
    """A trace that gave no run, and why."""

    trace_id: str
    root: str | None  # the root span's name
    service: str | None
    spans: int
    logs: int
    reason: str

    @property
    def message(self) -> str:
        root = repr(self.root) if self.root is not None else "none received"
        return (
            f"trace {self.trace_id[:12]} (root span {root}, service {self.service!r}, "
            f"{self.spans} span(s), {self.logs} log record(s)): no run: {self.reason}"
        )


NO_CALL = (
    "no span is a model or tool call (none has gen_ai.operation.name chat or "
    "execute_tool, openinference.span.kind LLM or TOOL, or llm.request.type chat)"
)


def group_traces(spans: Iterable[SpanRecord]) -> dict[str, list[SpanRecord]]:
    traces: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in spans:
        traces[span.trace_id].append(span)
    return dict(traces)


def _skipped(spans: list[SpanRecord], logs: int) -> SkippedTrace:
    real = [s for s in spans if s.signal != "log"]
    ids = {s.span_id for s in real}
    roots = [s for s in real if s.parent_id not in ids]
    root = min(roots, key=lambda s: s.start_ns) if roots else None
    names = sorted({s.name for s in real})
    reason = NO_CALL
    if names:
        shown = ", ".join(repr(name[:40]) for name in names[:5])
        reason += f"; its spans: {shown}" + (" …" if len(names) > 5 else "")
    elif logs:
        reason = "only log records, none naming a span of the trace or a Claude Code event"
    return SkippedTrace(
        trace_id=spans[0].trace_id,
        root=root.name if root and root.parent_id is None else None,
        service=next((s.service for s in spans if s.service), None),
        spans=len(real),
        logs=logs,
        reason=reason,
    )


def _used_spans(spans: list[SpanRecord]) -> int:
    """Spans the run is made of: model and tool calls, and the one that is the run."""
    used = sum(span.kind in ("LLM", "TOOL") for span in spans)
    agents = [s for s in spans if s.kind == "AGENT"]
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id not in ids and s.kind == "OTHER"]
    return used + bool(agents or roots)


def write_run(home: Path, spans: list[SpanRecord]) -> ImportedRun | SkippedTrace:
    """Write one trace's spans (and log records) as a run under `home`, with the home's
    redaction; a SkippedTrace saying why when they hold no model call and no tool call.
    Raises RedactionConfigError for a configured pattern that does not compile."""
    folded = fold_logs(spans)
    if not any(span.kind in ("LLM", "TOOL") for span in folded.spans):
        return _skipped(spans, folded.logs)
    received = sum(span.signal != "log" for span in spans)
    try:
        events = run_events(folded.spans)
    except (ValueError, OverflowError) as exc:  # pydantic's ValidationError is a ValueError
        why = describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
        raise OtlpError(f"trace {spans[0].trace_id}: its spans do not make a run ({why})") from None
    return replace(
        write_imported(home, events),
        spans=received,
        unused_spans=max(0, received - _used_spans(folded.spans)),
        logs=folded.logs,
        unused_logs=folded.unused_logs,
    )
