"""Runs as OpenTelemetry spans, sent with the official OTLP/HTTP exporter.

One trace per run: an `invoke_agent` span for the run, and under it a `chat` span per model
call (each attempt) and an `execute_tool` span per tool call, timed from the trace's own
timestamps. Ids derive from the run id and the event's seq, so exporting a run twice sends
the same trace and span ids and a backend that keys on them keeps one copy. The attributes
are in `attrs`. A fork's agent span links to its parent run's; history trims are events
on the agent span. Streamed chunks and MCP frames are not exported.

Needs the `otel` extra; imported only by the commands that use it.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import metadata
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event as SpanEvent
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from traces.events import Event
from traces.tree import ModelCallNode, RunChain, ToolCallNode, build_chain
from workbench.engine.otel import attrs as a


def _version() -> str:
    try:
        return metadata.version("agent-workbench")
    except metadata.PackageNotFoundError:
        return "0"


SCOPE = InstrumentationScope("agent-workbench", _version())
_LOGGER = "opentelemetry.exporter.otlp.proto.http"


class OtelExportError(Exception):
    """The endpoint did not take the spans; one line saying why."""


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _ns(ts: datetime) -> int:
    # Integer arithmetic: a float timestamp can be a microsecond off.
    return (ts - _EPOCH) // _MICROSECOND * 1000


def _context(trace: int, span: int) -> SpanContext:
    return SpanContext(trace, span, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


Redact = Callable[[str], str]


class _RunSpans:
    """Builds one run's spans."""

    def __init__(self, chain: RunChain, resource: Resource, redact: Redact | None) -> None:
        self.chain = chain
        self.resource = resource
        self.redact = redact
        self.trace = a.trace_id(chain.run_id)
        self.root = a.span_id(chain.run_id, chain.start.seq if chain.start else 0)
        start = chain.start
        self.model = start.model if start else ""
        provider = a.provider_of(start.base_url if start else None)
        # The workbench speaks the OpenAI API, whoever serves it.
        self.provider: dict[str, Any] = {a.LLM_SYSTEM: "openai"}
        if provider is not None:
            self.provider |= {a.PROVIDER: provider[0], a.LLM_PROVIDER: provider[1]}
        self.tools = {
            str((tool.get("function") or tool).get("name")): tool.get("function") or tool
            for tool in (start.tools if start else [])
        }

    def _span(
        self,
        name: str,
        span: int,
        parent: int | None,
        attributes: dict[str, Any],
        start: datetime,
        end: datetime,
        status: Status,
        kind: SpanKind = SpanKind.INTERNAL,
        links: tuple[Link, ...] = (),
        events: tuple[SpanEvent, ...] = (),
    ) -> ReadableSpan:
        clean = {k: v for k, v in attributes.items() if v is not None}
        if self.redact is not None:
            redact = self.redact
            clean = {k: redact(v) if isinstance(v, str) else v for k, v in clean.items()}
        return ReadableSpan(
            name=name,
            context=_context(self.trace, span),
            parent=_context(self.trace, parent) if parent is not None else None,
            resource=self.resource,
            attributes=clean,
            kind=kind,
            status=status,
            start_time=_ns(start),
            end_time=_ns(max(end, start)),
            instrumentation_scope=SCOPE,
            links=links,
            events=events,
        )

    def spans(self) -> Iterator[ReadableSpan]:
        for turn in self.chain.turns:
            for call in turn.model_calls:
                if call.request is not None:
                    yield self._chat(turn.turn, call)
            for tool in turn.tool_calls:
                yield self._tool(tool)
        yield self._agent()

    def _agent(self) -> ReadableSpan:
        chain, start, end = self.chain, self.chain.start, self.chain.end
        times = [e.ts for turn in chain.turns for e in turn.events]
        times += [e.ts for e in (start, end) if e is not None]
        first = start.ts if start else min(times)
        last = end.ts if end else max(times)
        totals = end.totals if end else None
        status = Status(StatusCode.UNSET)
        if end is not None:
            status = (
                Status(StatusCode.OK)
                if end.status == "completed"
                else Status(StatusCode.ERROR, f"{end.status}: {end.reason}".rstrip(": "))
            )
        attributes: dict[str, Any] = {
            a.OPERATION: "invoke_agent",
            a.AGENT_NAME: a.AGENT_NAME_VALUE,
            a.CONVERSATION_ID: chain.run_id,
            a.REQUEST_MODEL: self.model or None,
            a.INPUT_TOKENS: totals.input_tokens if totals else None,
            a.OUTPUT_TOKENS: totals.output_tokens if totals else None,
            a.TOOL_DEFINITIONS: _json(list(self.tools.values())) if self.tools else None,
            a.SYSTEM_INSTRUCTIONS: _json([{"type": "text", "content": start.system_prompt}])
            if start and start.system_prompt
            else None,
            a.ERROR_TYPE: end.status if end and end.status != "completed" else None,
            a.SPAN_KIND: "AGENT",
            a.OI_AGENT_NAME: a.AGENT_NAME_VALUE,
            a.SESSION_ID: chain.run_id,
            a.INPUT_VALUE: start.task if start else None,
            a.INPUT_MIME: "text/plain",
            a.OUTPUT_VALUE: end.final_answer if end else None,
            a.OUTPUT_MIME: "text/plain" if end and end.final_answer is not None else None,
            a.LLM_TOTAL_TOKENS: totals.total_tokens if totals else None,
            a.RUN_ID: chain.run_id,
            a.RUN_STATUS: chain.status,
            a.RUN_REASON: end.reason if end else None,
            a.TIMEOUT_LAYER: end.timeout_layer if end else None,
            a.PARENT_RUN_ID: start.parent_run_id if start else None,
            a.RUN_ORIGIN: start.origin if start else None,
            a.RUN_CLIENT: start.client if start else None,
            a.SYSTEM_PROMPT: start.system_prompt if start else None,
        }
        links: tuple[Link, ...] = ()
        if start is not None and start.parent_run_id:
            # A fork points at the run it was forked from: ids are derived, so no lookup.
            parent = start.parent_run_id
            parent_span = _context(a.trace_id(parent), a.span_id(parent, 0))
            link: dict[str, str | int] = {
                a.PARENT_RUN_ID: parent,
                a.FORK_TURN: start.fork_turn or 0,
            }
            links = (Link(parent_span, link),)
        trims = [*chain.trims, *(trim for turn in chain.turns for trim in turn.trims)]
        events = tuple(
            SpanEvent(a.TRIM_EVENT, a.trim_attributes(trim), timestamp=_ns(trim.ts))
            for trim in sorted(trims, key=lambda trim: trim.seq)
        )
        name = f"invoke_agent {a.AGENT_NAME_VALUE}"
        return self._span(
            name, self.root, None, attributes, first, last, status, links=links, events=events
        )

    def _chat(self, turn: int, call: ModelCallNode) -> ReadableSpan:
        request = call.request
        assert request is not None
        response, error = call.response, call.error
        end_ts = response.ts if response else error.ts if error else request.ts
        if response is None and call.chunks:
            end_ts = max(end_ts, call.chunks[-1].ts)
        usage = (response.usage or {}) if response else {}
        messages = request.messages
        attributes: dict[str, Any] = {
            a.OPERATION: "chat",
            a.REQUEST_MODEL: self.model or None,
            a.INPUT_MESSAGES: _json([a.to_semconv(m) for m in messages]),
            a.INPUT_TOKENS: usage.get("prompt_tokens"),
            a.OUTPUT_TOKENS: usage.get("completion_tokens"),
            a.SPAN_KIND: "LLM",
            a.LLM_MODEL: self.model or None,
            a.LLM_PARAMS: _json(request.params),
            a.LLM_PROMPT_TOKENS: usage.get("prompt_tokens"),
            a.LLM_COMPLETION_TOKENS: usage.get("completion_tokens"),
            a.LLM_TOTAL_TOKENS: usage.get("total_tokens"),
            a.INPUT_VALUE: _json({"messages": messages}),
            a.INPUT_MIME: "application/json",
            a.TURN: turn,
            a.ATTEMPT: call.attempt,
            a.SEQ: request.seq,
        }
        attributes |= self.provider
        for key, value in request.params.items():
            if key in a.REQUEST_PARAMS and isinstance(value, int | float):
                attributes[a.REQUEST_PARAMS[key]] = value
        attributes |= a.flatten_messages(a.LLM_INPUT, messages)
        for i, tool in enumerate(request.tools):
            attributes[f"{a.LLM_TOOLS}.{i}.tool.json_schema"] = _json(tool)
        status = Status(StatusCode.UNSET)
        if response is not None:
            output = a.to_semconv(response.message)
            output["finish_reason"] = response.finish_reason or "stop"
            attributes |= {
                a.OUTPUT_MESSAGES: _json([output]),
                a.FINISH_REASONS: [response.finish_reason] if response.finish_reason else None,
                a.OUTPUT_VALUE: _json(response.message),
                a.OUTPUT_MIME: "application/json",
            }
            attributes |= a.flatten_messages(a.LLM_OUTPUT, [response.message])
        elif error is not None:
            status = Status(StatusCode.ERROR, f"{error.kind}: {error.message}")
            attributes[a.ERROR_TYPE] = error.kind
        name = f"chat {self.model}".strip()
        span = a.span_id(self.chain.run_id, request.seq)
        return self._span(
            name, span, self.root, attributes, request.ts, end_ts, status, SpanKind.CLIENT
        )

    def _tool(self, call: ToolCallNode) -> ReadableSpan:
        start, end = call.start, call.end
        schema = self.tools.get(call.name) or {}
        attributes: dict[str, Any] = {
            a.OPERATION: "execute_tool",
            a.TOOL_NAME: call.name,
            a.TOOL_CALL_ID: call.call_id,
            a.TOOL_TYPE: "function",
            a.TOOL_DESCRIPTION: schema.get("description"),
            a.TOOL_ARGUMENTS: start.arguments_raw,
            a.TOOL_RESULT: end.result if end else None,
            a.SPAN_KIND: "TOOL",
            a.OI_TOOL_NAME: call.name,
            a.OI_TOOL_DESCRIPTION: schema.get("description"),
            a.OI_TOOL_PARAMETERS: _json(schema["parameters"]) if "parameters" in schema else None,
            a.OI_TOOL_CALL_ID: call.call_id,
            a.INPUT_VALUE: start.arguments_raw,
            a.INPUT_MIME: "application/json" if start.arguments is not None else "text/plain",
            a.OUTPUT_VALUE: end.result if end else None,
            a.OUTPUT_MIME: "text/plain" if end else None,
            a.TURN: start.turn,
            a.SEQ: start.seq,
            a.TOOL_SOURCE: start.source,
            a.TOOL_MOCKED: end.mocked if end else None,
            a.TOOL_REPLAYED: end.replayed if end else None,
            a.TOOL_ERROR: end.error if end else None,
            a.TOOL_OBSERVED: end.observed if end else None,
        }
        status = Status(StatusCode.UNSET)
        if end is not None and not end.ok:
            status = Status(StatusCode.ERROR, end.error or end.result)
            attributes[a.ERROR_TYPE] = "tool_error"
        span = a.span_id(self.chain.run_id, start.seq)
        return self._span(
            f"execute_tool {call.name}",
            span,
            self.root,
            attributes,
            start.ts,
            end.ts if end else start.ts,
            status,
        )


# The event types spans are made of: a run's chunks and MCP frames, most of its events, are
# not read at all.
SPAN_EVENT_TYPES = (
    "run_start",
    "model_request",
    "model_response",
    "error",
    "tool_start",
    "tool_end",
    "history_trimmed",
    "run_end",
)


def run_spans(
    events: Iterable[Event], resource: Resource, redact: Redact | None = None
) -> list[ReadableSpan]:
    """One run's spans, children first and the `invoke_agent` span last; none for a run
    without a run_start or a turn (nothing to show)."""
    chain = build_chain(events)
    if chain.start is None and not chain.turns:
        return []
    return list(_RunSpans(chain, resource, redact).spans())


def resource() -> Resource:
    """The SDK's resource ($OTEL_RESOURCE_ATTRIBUTES, $OTEL_SERVICE_NAME), with
    `service.name=agent-workbench` unless those name the service."""
    detected = Resource.create()
    name = detected.attributes.get("service.name")
    if isinstance(name, str) and not name.startswith("unknown_service"):
        return detected
    return detected.merge(Resource({"service.name": a.AGENT_NAME_VALUE}))


def traces_endpoint(url: str) -> str:
    """A collector's base URL gets OTLP's traces path; a URL with a path is kept as is."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise OtelExportError(f"{url!r} is not an http(s) URL of an OTLP/HTTP endpoint")
    if parts.path in ("", "/"):
        return url.rstrip("/") + "/v1/traces"
    return url


def exporter(
    endpoint: str | None, headers: dict[str, str] | None, timeout_s: float
) -> OTLPSpanExporter:
    """The OTLP/HTTP exporter; what is not given comes from $OTEL_EXPORTER_OTLP_*."""
    return OTLPSpanExporter(
        endpoint=traces_endpoint(endpoint) if endpoint else None,
        headers=headers or None,
        timeout=timeout_s,
    )


class _FirstMessage(logging.Handler):
    """Keeps the exporter's first complaint, which says why (the later ones that it gave up)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.message: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.message is None:
            self.message = record.getMessage().splitlines()[0]


def _unreachable(endpoint: str) -> str | None:
    """Why nothing listens at `endpoint`, if so: the exporter may give up on its retries
    before it says (its backoff is random)."""
    parts = urlsplit(endpoint)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "localhost", port), timeout=2):
            return None
    except OSError as exc:
        return f"cannot connect ({exc.strerror or exc})"


@dataclass
class ExportProgress:
    runs_done: int = 0
    runs_total: int = 0
    spans: int = 0


class SpanSender:
    """Sends spans in batches from one background thread, so the next batch is built while
    one is on its way (never more than one: batches go in order, and memory stays bounded).
    A batch the endpoint refuses raises `OtelExportError` from the next `add` or `flush`.
    The exporter's own log lines are kept out of the terminal; the first one is the error."""

    def __init__(self, span_exporter: SpanExporter, batch_size: int = 512) -> None:
        self.exporter = span_exporter
        self.batch_size = batch_size
        self.pending: list[ReadableSpan] = []
        self.sent = 0
        self.endpoint = getattr(span_exporter, "_endpoint", "the OTLP endpoint")
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="otlp-export")
        self._in_flight: Future[None] | None = None

    def add(self, spans: list[ReadableSpan]) -> None:
        self.pending.extend(spans)
        if len(self.pending) >= self.batch_size:
            self._submit()

    def flush(self) -> None:
        """Send what is pending and wait until every batch is in."""
        if self.pending:
            self._submit()
        self._wait()

    def _submit(self) -> None:
        batch, self.pending = self.pending, []
        self._wait()
        self._in_flight = self._pool.submit(self._send, batch)

    def _wait(self) -> None:
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is not None:
            in_flight.result()

    def _send(self, batch: list[ReadableSpan]) -> None:
        logger = logging.getLogger(_LOGGER)
        handler = _FirstMessage()
        propagate, level = logger.propagate, logger.level
        logger.addHandler(handler)
        logger.propagate = False
        logger.setLevel(logging.WARNING)
        try:
            result = self.exporter.export(batch)
        finally:
            logger.removeHandler(handler)
            logger.propagate = propagate
            logger.setLevel(level)
        if result is not SpanExportResult.SUCCESS:
            why = _unreachable(self.endpoint) or handler.message or "the export failed"
            raise OtelExportError(f"{self.endpoint} did not take the spans: {why}")
        self.sent += len(batch)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.exporter.shutdown()


def export_runs(
    runs: Iterable[list[Event]],
    sender: SpanSender,
    resource: Resource,
    redact: Redact | None = None,
    total: int = 0,
    progress: Callable[[ExportProgress], None] | None = None,
) -> ExportProgress:
    """Build and send every run's spans; `progress` is told after each run."""
    state = ExportProgress(runs_total=total)
    for events in runs:
        spans = run_spans(events, resource, redact)
        sender.add(spans)
        state.runs_done += 1
        state.spans += len(spans)
        if progress is not None:
            progress(state)
    sender.flush()
    return state
