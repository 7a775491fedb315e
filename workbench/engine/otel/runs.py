"""The spans of one trace as one run's events, in the trace contract.

GenAI semantic-convention and OpenInference spans are recognised: an LLM / `chat` span is
a model call (a turn, unless the exporter numbered turns itself), a TOOL / `execute_tool`
span a tool call, an AGENT / `invoke_agent` span (else the trace's root) the run itself. A
tool call the client ran without a span of its own is recovered from the messages: the
model asked for it in one answer and its result came back in a later request; such a call
is `observed`. Events take the spans' times; `run_start.origin` is "imported" and `client`
the instrumentation library (the scope of the model-call spans).

Plain Python on `SpanRecord`s; `ingest` reads OTLP into them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from agent_core.wire.arguments import parse_arguments
from traces.events import (
    Error,
    Event,
    HistoryTrimmed,
    ModelRequest,
    ModelResponse,
    RunEnd,
    RunStart,
    RunStatus,
    ToolEnd,
    ToolStart,
    is_run_status,
)
from traces.totals import RunningTotals
from workbench.engine.otel import attrs as a
from workbench.engine.otel.dialects import (
    input_messages,
    json_value,
    offered_tools,
    output_message,
    request_params,
    usage,
)
from workbench.engine.otel.spans import SpanRecord

_EVENT_TYPES: dict[str, Any] = {
    "model_request": ModelRequest,
    "model_response": ModelResponse,
    "error": Error,
    "tool_start": ToolStart,
    "tool_end": ToolEnd,
    "history_trimmed": HistoryTrimmed,
}


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _ts(ns: int) -> datetime:
    return _EPOCH + timedelta(microseconds=ns // 1000)


def _tool_call(raw: str) -> dict[str, Any]:
    parsed = parse_arguments(raw)
    return {"arguments_raw": raw, "arguments": parsed.value, "parse_error": parsed.error}


# --- the run --------------------------------------------------------------------------


@dataclass
class _Timeline:
    """Events to be, ordered by time; at equal times the span that started first goes
    first, and a span's start before its end."""

    items: list[tuple[int, int, int, int, dict[str, Any]]] = field(default_factory=list)

    def add(self, at_ns: int, span: SpanRecord, phase: int, event: dict[str, Any]) -> None:
        order = span.number(a.SEQ) or 0
        event["ts"] = _ts(at_ns)
        self.items.append((at_ns, span.start_ns, order * 4 + phase, len(self.items), event))

    def sorted(self) -> list[dict[str, Any]]:
        return [item[-1] for item in sorted(self.items, key=lambda item: item[:4])]


class _RunBuilder:
    def __init__(self, spans: list[SpanRecord]) -> None:
        self.spans = spans
        self.run_id = spans[0].trace_id
        llms = sorted((s for s in spans if s.kind == "LLM"), key=lambda s: (s.start_ns, s.name))
        # Turns: the exporter's own numbering when present, else one per model call.
        self.turns = [(span, span.number(a.TURN) or n) for n, span in enumerate(llms, 1)]
        self.agent = _agent_span(spans)
        self.timeline = _Timeline()
        self.asked: dict[str, tuple[int, int]] = {}  # tool call id -> (time asked, turn)
        self.answered: dict[str, tuple[int, str]] = {}  # tool call id -> (time seen, result)

    def turn_at(self, ns: int) -> int:
        current = 1
        for span, turn in self.turns:
            if span.start_ns <= ns:
                current = turn
        return current

    def model_calls(self) -> None:
        for span, turn in self.turns:
            attempt = span.number(a.ATTEMPT) or 1
            messages = input_messages(span)
            request = {"type": "model_request", "turn": turn, "attempt": attempt}
            request |= {
                "messages": messages,
                "tools": offered_tools(span),
                "params": request_params(span),
            }
            self.timeline.add(span.start_ns, span, 0, request)
            for sent in messages:
                call_id = sent.get("tool_call_id")
                if sent.get("role") == "tool" and call_id in self.asked:
                    result = a.text_of(sent.get("content")) or ""
                    self.answered.setdefault(str(call_id), (span.start_ns, result))
            message, finish = output_message(span)
            if span.error:
                kind = str(span.attributes.get(a.ERROR_TYPE) or "error")
                error = {"type": "error", "turn": turn, "attempt": attempt, "where": "model"}
                error |= {"kind": kind, "message": span.status_message or "the call failed"}
                self.timeline.add(span.end_ns, span, 1, error)
                continue
            if message is None:
                if a.ATTEMPT in span.attributes:
                    continue  # the workbench exported a call that never answered: still open
                # Instrumentation that leaves message content out still saw the call end.
                message = {"role": "assistant", "content": None}
            response = {"type": "model_response", "turn": turn, "attempt": attempt}
            response |= {
                "message": message,
                "finish_reason": finish,
                "usage": usage(span),
                "latency_ms": span.duration_ms,
            }
            self.timeline.add(span.end_ns, span, 1, response)
            for call in message.get("tool_calls") or []:
                if call.get("id"):
                    self.asked[str(call["id"])] = (span.end_ns, turn)

    def tool_spans(self) -> set[str]:
        """The tool calls that have spans; returns their call ids."""
        spanned: set[str] = set()
        for span in sorted((s for s in self.spans if s.kind == "TOOL"), key=lambda s: s.start_ns):
            name = str(span.get(a.TOOL_NAME, a.OI_TOOL_NAME) or span.name)
            raw = span.get(a.TOOL_ARGUMENTS, a.PYDANTIC_TOOL_ARGUMENTS, a.INPUT_VALUE)
            raw = raw if isinstance(raw, str) else json.dumps(raw if raw is not None else {})
            call_id = str(
                span.get(a.TOOL_CALL_ID, a.OI_TOOL_CALL_ID)
                or self._asked_before(span.start_ns, name, raw, spanned)
                or span.span_id
            )
            spanned.add(call_id)
            turn = span.number(a.TURN) or self.turn_at(span.start_ns)
            base = {"turn": turn, "call_id": call_id, "name": name}
            source = str(span.attributes.get(a.TOOL_SOURCE) or "imported")
            start = {"type": "tool_start", **base, **_tool_call(raw), "source": source}
            self.timeline.add(span.start_ns, span, 0, start)
            result = span.get(a.TOOL_RESULT, a.PYDANTIC_TOOL_RESULT, a.OUTPUT_VALUE)
            failed = span.status_message or "the tool failed" if span.error else None
            end = {"type": "tool_end", **base, "ok": not span.error}
            end |= {
                "result": result
                if isinstance(result, str)
                else json.dumps(result)
                if result is not None
                else "",
                "error": span.attributes.get(a.TOOL_ERROR) or failed,
                "duration_ms": span.duration_ms,
                "mocked": bool(span.attributes.get(a.TOOL_MOCKED)),
                "replayed": bool(span.attributes.get(a.TOOL_REPLAYED)),
                "observed": bool(span.attributes.get(a.TOOL_OBSERVED)),
            }
            self.timeline.add(span.end_ns, span, 1, end)
        return spanned

    def _asked_before(self, at_ns: int, name: str, raw: str, taken: set[str]) -> str | None:
        """The call a tool span without a call id ran (the OpenAI Agents SDK's spans name
        none): the earliest one asked for before it, of its name, not yet matched,
        with the same arguments when one has them."""
        candidates: list[tuple[int, str, bool]] = []
        for span, _ in self.turns:
            if span.end_ns > at_ns:
                continue
            answer, _ = output_message(span)
            for call in (answer or {}).get("tool_calls") or []:
                function = call.get("function") or {}
                call_id = call.get("id")
                if call_id and call_id not in taken and function.get("name") == name:
                    asked = parse_arguments(str(function.get("arguments") or "")).value
                    same = asked == parse_arguments(raw).value
                    candidates.append((span.end_ns, str(call_id), same))
        exact = [c for c in candidates if c[2]] or candidates
        return min(exact)[1] if exact else None

    def observed_calls(self, spanned: set[str]) -> None:
        """Calls the client ran without spans: asked for in one answer, answered later."""
        for span, turn in self.turns:
            answer, _ = output_message(span)
            for call in (answer or {}).get("tool_calls") or []:
                call_id = str(call.get("id"))
                if call_id in spanned or call_id not in self.answered:
                    continue
                function = call.get("function") or {}
                base = {"turn": turn, "call_id": call_id, "name": str(function.get("name") or "")}
                raw = str(function.get("arguments") or "")
                asked = self.asked[call_id][0]
                seen, result = self.answered[call_id]
                start = {"type": "tool_start", **base, **_tool_call(raw), "source": "imported"}
                self.timeline.add(asked, span, 2, start)
                end = {"type": "tool_end", **base, "ok": True, "result": result}
                end |= {"duration_ms": (seen - asked) / 1e6, "observed": True}
                self.timeline.add(seen, span, 3, end)

    def run_start(self) -> RunStart:
        agent, spans = self.agent, self.spans
        first = self.turns[0][0] if self.turns else None
        messages = input_messages(first) if first else []
        user = next((m for m in messages if m.get("role") == "user"), None)
        system = next((m for m in messages if m.get("role") == "system"), None)
        task = agent.get(a.INPUT_VALUE) if agent else None
        if not isinstance(task, str):
            task = a.text_of(user.get("content")) if user else None
        model = (agent.get(a.REQUEST_MODEL, a.LLM_MODEL) if agent else None) or (
            first.get(a.REQUEST_MODEL, a.LLM_MODEL, a.RESPONSE_MODEL) if first else None
        )
        system_prompt = agent.get(a.SYSTEM_PROMPT) if agent else None
        if system_prompt is None and system is not None:
            system_prompt = a.text_of(system.get("content"))
        client = next((s.scope for s in spans if s.kind == "LLM" and s.scope), None)
        tools = (offered_tools(agent) if agent else []) or (offered_tools(first) if first else [])
        tools = tools or _tools_of_tool_spans(spans)
        return RunStart(
            run_id=self.run_id,
            seq=0,
            ts=_ts(agent.start_ns if agent else min(s.start_ns for s in spans)),
            task=task or (first.name if first else spans[0].name),
            system_prompt=system_prompt,
            model=str(model or "unknown"),
            params=request_params(first) if first else {},
            tools=tools,
            origin="imported",
            client=client or next((s.scope for s in spans if s.scope), None),
            meta={
                "otel": {
                    "trace_id": self.run_id,
                    "service": next((s.service for s in spans if s.service), None),
                    "run_id": agent.get(a.RUN_ID) if agent else None,
                }
            },
        )

    def run_end(self, events: list[Event]) -> RunEnd | None:
        """The run's end; None for a run the exporter reported as still going."""
        agent = self.agent
        status = _status(agent, [span for span, _ in self.turns])
        if status is None:
            return None
        output = agent.get(a.OUTPUT_VALUE, a.PYDANTIC_FINAL_RESULT) if agent else None
        final_answer = output if isinstance(output, str) else None
        responses = [e for e in events if isinstance(e, ModelResponse)]
        if final_answer is None and responses:
            final_answer = a.text_of(responses[-1].message.get("content"))
        counted = RunningTotals(turns=len({turn for _, turn in self.turns}))
        for response in responses:
            usage = response.usage or {}
            counted.add_model_call(
                int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
            )
        for event in events:
            if isinstance(event, ToolEnd):
                counted.add_tool_call(event.ok)
        start_ns = min(s.start_ns for s in self.spans)
        end_ns = max(s.end_ns for s in self.spans)
        layer = agent.get(a.TIMEOUT_LAYER) if agent else None
        reason = (agent.get(a.RUN_REASON) or agent.status_message) if agent else ""
        return RunEnd(
            run_id=self.run_id,
            seq=len(events),
            ts=_ts(agent.end_ns if agent else end_ns),
            status=status,
            reason=str(reason or ""),
            timeout_layer=layer if layer in ("model", "tool", "run") else None,
            final_answer=final_answer,
            totals=counted.totals((end_ns - start_ns) / 1e6),
        )

    def trims(self) -> None:
        """History trims the workbench exported as events of the agent span."""
        if self.agent is None:
            return
        for event in self.agent.events:
            if event.name != a.TRIM_EVENT:
                continue
            fields = {
                name: event.attributes[f"workbench.{name}"]
                for name in a.TRIM_FIELDS
                if f"workbench.{name}" in event.attributes
            }
            turn = event.attributes.get(a.TURN)
            trim = {"type": "history_trimmed", "turn": turn, **fields}
            self.timeline.add(event.time_ns, self.agent, 0, trim)

    def events(self) -> list[Event]:
        self.model_calls()
        self.trims()
        self.observed_calls(self.tool_spans())
        events: list[Event] = [self.run_start()]
        for seq, item in enumerate(self.timeline.sorted(), start=1):
            kind = _EVENT_TYPES[item.pop("type")]
            events.append(kind(run_id=self.run_id, seq=seq, **item))
        end = self.run_end(events)
        return [*events, end] if end is not None else events


def _tools_of_tool_spans(spans: list[SpanRecord]) -> list[dict[str, Any]]:
    """The tools as their spans describe them (OpenInference's `tool.description` and
    `tool.parameters`), for a producer whose model-call spans list none."""
    tools: dict[str, dict[str, Any]] = {}
    for span in spans:
        name = span.get(a.OI_TOOL_NAME, a.TOOL_NAME)
        parameters = json_value(span.attributes.get(a.OI_TOOL_PARAMETERS))
        if span.kind != "TOOL" or not isinstance(name, str) or not isinstance(parameters, dict):
            continue
        function: dict[str, Any] = {"name": name}
        description = span.get(a.OI_TOOL_DESCRIPTION, a.TOOL_DESCRIPTION)
        if isinstance(description, str):
            function["description"] = description
        function["parameters"] = parameters
        tools.setdefault(name, {"type": "function", "function": function})
    return list(tools.values())


def _agent_span(spans: list[SpanRecord]) -> SpanRecord | None:
    agents = [span for span in spans if span.kind == "AGENT"]
    if agents:
        return min(agents, key=lambda span: span.start_ns)
    ids = {span.span_id for span in spans}
    roots = [s for s in spans if s.parent_id not in ids and s.kind == "OTHER"]
    return min(roots, key=lambda span: span.start_ns) if roots else None


def _status(agent: SpanRecord | None, llms: list[SpanRecord]) -> RunStatus | None:
    declared = agent.attributes.get(a.RUN_STATUS) if agent else None
    if declared == "incomplete":
        return None
    if is_run_status(declared):
        return declared
    last = agent or (llms[-1] if llms else None)
    return "error" if last is not None and last.error else "completed"


def run_events(spans: list[SpanRecord]) -> list[Event]:
    """One trace's spans (at least one) as one run's events. Raises pydantic's
    ValidationError when attribute values do not fit the trace contract."""
    return _RunBuilder(spans).events()
