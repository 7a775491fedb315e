"""What every OTLP signal shares: the error for a payload that is not OTLP, attribute
values as Python values, ids in OTLP JSON, reading JSON within bounds, and reading an
export request from protobuf or OTLP JSON."""

from __future__ import annotations

import base64
import json
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

Request = TypeVar("Request", bound=Message)


class OtlpError(ValueError):
    """The payload is not an OTLP export; one line saying why."""


def any_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind) if kind else None


TOO_DEEP = "JSON nested too deeply to be an OTLP trace export"


def loads(text: str | bytes) -> Any:
    """JSON text as a value; OtlpError when it is not JSON or nests too deep to read."""
    try:
        return json.loads(text)
    except RecursionError:
        raise OtlpError(TOO_DEEP) from None
    except ValueError:  # also bytes that are not UTF-8
        raise OtlpError("not valid JSON") from None


_ID_KEYS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


def ids_to_base64(node: Any) -> Any:
    """OTLP JSON writes ids as hex; protobuf's JSON mapping expects bytes as base64."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                try:
                    value = base64.b64encode(bytes.fromhex(value)).decode()
                except ValueError:
                    raise OtlpError(f"{key} {value!r} is not a hex id") from None
            out[key] = ids_to_base64(value)
        return out
    if isinstance(node, list):
        return [ids_to_base64(item) for item in node]
    return node


def read_protobuf(request: Request, data: bytes, signal: str) -> Request:
    """`request` (an empty export request of `signal`: trace, logs, metrics) read from
    protobuf bytes."""
    try:
        request.ParseFromString(data)
    except DecodeError as exc:  # also a message nested past protobuf's depth limit
        raise OtlpError(f"not an OTLP protobuf {signal} export ({exc})") from None
    return request


def read_json(request: Request, document: Any, key: str, signal: str) -> Request:
    """`request` read from an OTLP JSON document whose top-level list is `key`
    (`resourceSpans`, …; the protobuf field name is accepted too), its hex ids as OTLP JSON
    writes them."""
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in key)
    if not isinstance(document, dict) or not (key in document or snake in document):
        raise OtlpError(f"not an OTLP JSON {signal} export (no {key})")
    try:
        json_format.ParseDict(ids_to_base64(document), request, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise OtlpError(f"not an OTLP JSON {signal} export ({str(exc).splitlines()[0]})") from None
    except RecursionError:  # a document deep enough to read, too deep to walk
        raise OtlpError(f"JSON nested too deeply to be an OTLP {signal} export") from None
    return request
