"""OpenTelemetry spans from other agents as runs: OTLP in, trace files out.

An OTLP export request (protobuf, or OTLP JSON) is read into plain `SpanRecord`s; the spans
of one trace become one run (`runs` says how), written as
`<home>/traces/<trace id>.jsonl`. Importing the same trace again writes nothing.

Needs the `otel` extra (`opentelemetry-proto`); imported only by the commands that use it.
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from pydantic import ValidationError

from traces.reader import describe_validation_error
from workbench.engine.otel.runs import SpanEventRecord, SpanRecord, run_events

# Re-exported: the collector names the runs it writes by it.
from workbench.engine.recording.imported import ImportedRun as ImportedRun
from workbench.engine.recording.imported import write_imported

_STATUS_ERROR = 2  # opentelemetry.proto.trace.v1.Status.STATUS_CODE_ERROR


class OtlpError(ValueError):
    """The payload is not an OTLP trace export; one line saying why."""


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
        resource = {kv.key: _value(kv.value) for kv in resource_spans.resource.attributes}
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
                        attributes={kv.key: _value(kv.value) for kv in span.attributes},
                        error=span.status.code == _STATUS_ERROR,
                        status_message=span.status.message,
                        scope=scope,
                        service=service if isinstance(service, str) else None,
                        events=[
                            SpanEventRecord(
                                event.name,
                                event.time_unix_nano,
                                {kv.key: _value(kv.value) for kv in event.attributes},
                            )
                            for event in span.events
                        ],
                    )
                )
    return spans


def parse_protobuf(data: bytes) -> list[SpanRecord]:
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(data)
    except DecodeError as exc:  # also a message nested past protobuf's depth limit
        raise OtlpError(f"not an OTLP protobuf trace export ({exc})") from None
    return spans_of_request(request)


def loads(text: str | bytes) -> Any:
    """JSON text as a value; OtlpError when it is not JSON or nests too deep to read."""
    try:
        return json.loads(text)
    except RecursionError:
        raise OtlpError(_TOO_DEEP) from None
    except ValueError:  # also bytes that are not UTF-8
        raise OtlpError("not valid JSON") from None


_TOO_DEEP = "JSON nested too deeply to be an OTLP trace export"


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
    except RecursionError:  # a document deep enough to read, too deep to walk
        raise OtlpError(_TOO_DEEP) from None
    return spans_of_request(request)


def read_json_file(path: Path) -> list[SpanRecord]:
    """An OTLP JSON file: one export request, or one per line (the collector's file
    exporter writes JSON Lines). Problems name the file and line."""
    text = path.read_text(encoding="utf-8")
    try:
        return parse_json(json.loads(text))
    except json.JSONDecodeError:
        pass
    except RecursionError:
        raise OtlpError(f"{path}: {_TOO_DEEP}") from None
    except OtlpError as exc:
        raise OtlpError(f"{path}: {exc}") from None
    spans: list[SpanRecord] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            spans += parse_json(loads(line))
        except OtlpError as exc:
            raise OtlpError(f"{path}:{number}: {exc}") from None
    return spans


# --- writing runs -----------------------------------------------------------------------


def group_traces(spans: Iterable[SpanRecord]) -> dict[str, list[SpanRecord]]:
    traces: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in spans:
        traces[span.trace_id].append(span)
    return dict(traces)


def write_run(home: Path, spans: list[SpanRecord]) -> ImportedRun | None:
    """Write one trace's spans as a run under `home`, with the home's redaction; None when
    they hold no model call and no tool call (a trace of something else). Raises
    RedactionConfigError for a configured pattern that does not compile."""
    if not any(span.kind in ("LLM", "TOOL") for span in spans):
        return None
    try:
        events = run_events(spans)
    except (ValueError, OverflowError) as exc:  # pydantic's ValidationError is a ValueError
        why = describe_validation_error(exc) if isinstance(exc, ValidationError) else str(exc)
        raise OtlpError(f"trace {spans[0].trace_id}: its spans do not make a run ({why})") from None
    return write_imported(home, events)
