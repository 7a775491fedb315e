"""Spans and log records as read from OTLP, before they become a run's events: what the
dialects read their attributes from and `runs` turns into a trace."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.engine.otel import attrs as a


@dataclass
class SpanEventRecord:
    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass
class SpanRecord:
    """One span, as read from OTLP: ids in hex, times in ns, attributes as Python values."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    error: bool = False
    status_message: str = ""
    scope: str = ""  # the instrumentation scope's name and version
    service: str | None = None
    events: list[SpanEventRecord] = field(default_factory=list)

    signal: str = "span"  # "log": an OTLP log record, kept beside the spans of its trace

    @property
    def kind(self) -> str:
        """LLM, TOOL, AGENT or OTHER, from any of the vocabularies; LOG for a log record."""
        if self.signal == "log":
            return "LOG"
        oi = str(self.attributes.get(a.SPAN_KIND, "")).upper()
        operation = self.attributes.get(a.OPERATION)
        traceloop = self.attributes.get(a.TRACELOOP_KIND)
        request_type = self.attributes.get(a.LLM_REQUEST_TYPE)
        if (
            oi == "LLM"
            or operation in ("chat", "text_completion", "generate_content")
            or request_type in ("chat", "completion")
        ):
            return "LLM"
        if oi == "TOOL" or operation == "execute_tool" or traceloop == "tool":
            return "TOOL"
        if (
            oi == "AGENT"
            or operation in ("invoke_agent", "create_agent")
            or traceloop in ("agent", "workflow")
        ):
            return "AGENT"
        return "OTHER"

    def get(self, *keys: str) -> Any:
        """The first of these attributes that is set."""
        for key in keys:
            value = self.attributes.get(key)
            if value is not None:
                return value
        return None

    def number(self, key: str) -> int | None:
        value = self.attributes.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value)
        return None

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6
