"""What a request to `workbench collect` holds: OTLP/HTTP bodies (traces, logs, metrics) as
protobuf or JSON, gzip, deflate or neither, read within a limit as sent and once inflated,
or refused with the HTTP status and one line saying why (`BodyError`).

Needs the `otel` extra; imported only by the commands that use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from workbench.engine.otel.ingest import OtlpError, loads, parse_json, parse_protobuf
from workbench.engine.otel.logs import (
    metric_points_json,
    metric_points_protobuf,
    parse_logs_json,
    parse_logs_protobuf,
)
from workbench.engine.otel.spans import SpanRecord
from workbench.engine.serving import ENCODINGS, BodyError, inflated

__all__ = ["ENCODINGS", "BodyError", "decompressed"]

TRACES_PATH = "/v1/traces"
LOGS_PATH = "/v1/logs"
METRICS_PATH = "/v1/metrics"
# OTLP names the first; some clients send the second.
PROTOBUF_TYPES = ("application/x-protobuf", "application/protobuf")
# The most a request may be, as sent and once decompressed: past it, 413.
MAX_BODY = 64 * 1024 * 1024


def decompressed(body: bytes, encoding: str, limit: int = MAX_BODY) -> bytes:
    """The body a request's Content-Encoding wraps, inflated within `limit`
    (`serving.inflated`): BodyError 413 past it, 400 for a body that is not what it says."""
    too_big = f"the body inflates past {limit // 2**20} MiB; send smaller batches"
    return inflated(body, encoding, limit, too_big)


@dataclass
class Received:
    """What one request brought: spans and the log records kept with them, and counts."""

    spans: list[SpanRecord]
    span_count: int = 0
    log_count: int = 0
    metric_points: int = 0


def _read(path: str, data: bytes, protobuf: bool) -> Received:
    if path == TRACES_PATH:
        spans = parse_protobuf(data) if protobuf else parse_json(loads(data))
        return Received(spans, span_count=len(spans))
    if path == LOGS_PATH:
        batch = parse_logs_protobuf(data) if protobuf else parse_logs_json(loads(data))
        return Received(batch.records, log_count=batch.received)
    points = metric_points_protobuf(data) if protobuf else metric_points_json(loads(data))
    return Received([], metric_points=points)


def spans_of_body(
    body: bytes, content_type: str, encoding: str, limit: int = MAX_BODY, path: str = TRACES_PATH
) -> Received:
    """What a request body to `path` holds; BodyError for one the receiver refuses."""
    data = decompressed(body, encoding, limit)
    try:
        return _read(path, data, content_type in PROTOBUF_TYPES)
    except OtlpError as exc:
        refusal = BodyError(400, str(exc))
    del data  # now, not when the refusal's traceback goes
    raise refusal


# What each path answers a request it took, empty.
RESPONSES: dict[str, Any] = {
    TRACES_PATH: ExportTraceServiceResponse,
    LOGS_PATH: ExportLogsServiceResponse,
    METRICS_PATH: ExportMetricsServiceResponse,
}
