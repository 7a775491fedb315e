"""What a request to `workbench collect` holds: OTLP/HTTP bodies (traces, logs, metrics) as
protobuf or JSON, gzip, deflate or neither, read within a limit as sent and once inflated,
or refused with the HTTP status and one line saying why (`BodyError`).

Needs the `otel` extra; imported only by the commands that use it.
"""

from __future__ import annotations

import zlib
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

TRACES_PATH = "/v1/traces"
LOGS_PATH = "/v1/logs"
METRICS_PATH = "/v1/metrics"
# OTLP names the first; some clients send the second.
PROTOBUF_TYPES = ("application/x-protobuf", "application/protobuf")
# What OTLP exporters compress with; anything else is refused (415) before it is read.
ENCODINGS = ("identity", "gzip", "x-gzip", "deflate")
# The most a request may be, as sent and once decompressed: past it, 413.
MAX_BODY = 64 * 1024 * 1024


class BodyError(Exception):
    """A request the receiver refuses: the HTTP status and one line saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# Inflated a slice at a time into one buffer: slices of one size reuse the same memory, and
# the buffer goes back to the system when freed, so a bomb leaves no heap behind.
_SLICE = 1024 * 1024


def decompressed(body: bytes, encoding: str, limit: int = MAX_BODY) -> bytes:
    """The body a request's Content-Encoding wraps, inflated a slice at a time so that no
    more than `limit` bytes are ever held (a small gzip bomb would otherwise take
    gigabytes): BodyError 413 past the limit, 400 for a body that is not what it says."""
    if encoding == "identity":
        return body
    if encoding == "deflate":  # zlib-wrapped as the RFC says, or raw as some clients send
        wbits = zlib.MAX_WBITS if body[:1] and body[0] & 0x0F == 8 else -zlib.MAX_WBITS
    else:
        wbits = 16 + zlib.MAX_WBITS
    inflated = bytearray()
    rest = body
    while rest:  # a gzip body may be several members; each pass reads one
        inflater = zlib.decompressobj(wbits)
        while rest and not inflater.eof:  # each pass consumes input or adds output
            try:
                part = inflater.decompress(rest, min(_SLICE, limit + 1 - len(inflated)))
            except zlib.error as exc:
                raise BodyError(400, f"the body is not valid {encoding} ({exc})") from None
            inflated += part
            if len(inflated) > limit:
                inflated.clear()  # now, not when the refusal's traceback goes
                raise BodyError(
                    413, f"the body inflates past {limit // 2**20} MiB; send smaller batches"
                )
            rest = inflater.unconsumed_tail
        if not inflater.eof:
            raise BodyError(400, f"the body is not valid {encoding} (it ends too soon)")
        rest = inflater.unused_data
        if rest and wbits != 16 + zlib.MAX_WBITS:
            raise BodyError(400, f"the body is not valid {encoding} (data after its end)")
    return bytes(inflated)


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
