"""What a model-call span says, in each dialect real producers write.

Read in this order, the first that is there winning:
- OpenInference: `llm.input_messages.N.message.*` / `llm.output_messages.N.message.*`,
  `llm.tools.N.tool.json_schema`, `llm.token_count.*`.
- OpenLLMetry (traceloop's `opentelemetry-instrumentation-openai` before it moved to the
  conventions): `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`, `llm.request.functions.N.*`,
  `llm.usage.total_tokens`.
- The GenAI semantic conventions, latest: `gen_ai.input.messages` / `gen_ai.output.messages`
  / `gen_ai.system_instructions` / `gen_ai.tool.definitions`, as span attributes or on a
  `gen_ai.client.inference.operation.details` event (a log record folded into its span).
- The conventions' first form, one event per message (`gen_ai.system.message`,
  `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message`, `gen_ai.choice`,
  their content in the body), and before that `gen_ai.content.prompt` /
  `gen_ai.content.completion` events holding the messages as JSON.
pydantic-ai (Logfire) writes the conventions with its own turns: a tool's result is a
`tool_call_response` part under `result` in a `user` message, which becomes a `tool` message.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agent_core.wire.chat import arguments_text
from workbench.engine.otel import attrs as a

if TYPE_CHECKING:
    from workbench.engine.otel.spans import SpanRecord

# A log record's body, when it is folded into its span as an event.
EVENT_BODY = "event.body"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT = "gen_ai.choice"
# Every event name this module reads: the others of a span are not turned into anything.
READ_EVENTS = {*_MESSAGE_EVENTS, CHOICE_EVENT, DETAILS_EVENT, "gen_ai.content.prompt"}
READ_EVENTS |= {"gen_ai.content.completion"}


def json_value(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _attribute(span: SpanRecord, key: str) -> Any:
    """An attribute of the span, else of its operation-details event."""
    if key in span.attributes:
        return span.attributes[key]
    for event in span.events:
        if event.name == DETAILS_EVENT and key in event.attributes:
            return event.attributes[key]
    return None


# --- messages ------------------------------------------------------------------------


def _from_semconv_list(value: Any) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for message in value if isinstance(value, list) else []:
        if isinstance(message, dict):
            messages += a.from_semconv_messages(message)
    return messages


def _unflatten_openllmetry(prefix: str, attributes: dict[str, Any]) -> list[dict[str, Any]]:
    """OpenLLMetry's `gen_ai.prompt.N.role` / `.content` / `.tool_calls.M.name` … as
    OpenAI chat messages."""
    return a.unflatten_chat(
        prefix,
        attributes,
        "",
        ("role", "content", "tool_call_id", "name", "finish_reason"),
        ("id", "name", "arguments"),
    )


def _event_message(role: str, body: Any) -> dict[str, Any]:
    """A per-message event's body ({content, tool_calls, id}) as an OpenAI chat message."""
    body = body if isinstance(body, dict) else {"content": body}
    message: dict[str, Any] = {"role": body.get("role") or role}
    content = body.get("content")
    message["content"] = a.text_of(content) if content is not None else None
    calls = []
    for call in body.get("tool_calls") or []:
        if isinstance(call, dict):
            function = call.get("function")
            function = function if isinstance(function, dict) else {}
            arguments = arguments_text(function.get("arguments"))
            calls.append(
                {
                    "id": call.get("id"),
                    "type": "function",
                    "function": {"name": function.get("name") or "", "arguments": arguments},
                }
            )
    if calls:
        message["tool_calls"] = calls
    if role == "tool" and body.get("id"):
        message["tool_call_id"] = body["id"]
    return message


def _event_body(event: Any) -> Any:
    if EVENT_BODY in event.attributes:
        return json_value(event.attributes[EVENT_BODY]) or event.attributes[EVENT_BODY]
    return {k: v for k, v in event.attributes.items() if k in ("content", "tool_calls", "id")}


def link_tool_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A tool message without its call id (the first conventions' `gen_ai.tool.message`
    may leave it out) answers the first call of the assistant before it still unanswered."""
    waiting: list[str] = []
    for message in messages:
        if message.get("role") == "assistant":
            waiting = [str(c.get("id")) for c in message.get("tool_calls") or [] if c.get("id")]
        elif message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if call_id in waiting:
                waiting.remove(call_id)
            elif not call_id and waiting:
                message["tool_call_id"] = waiting.pop(0)
    return messages


def input_messages(span: SpanRecord) -> list[dict[str, Any]]:
    messages = a.unflatten_messages(a.LLM_INPUT, span.attributes)
    if messages:
        return messages
    messages = _unflatten_openllmetry(a.PROMPT_PREFIX, span.attributes)
    if not messages:
        messages = _from_semconv_list(json_value(_attribute(span, a.INPUT_MESSAGES)))
    if not messages:
        for event in span.events:
            if event.name in _MESSAGE_EVENTS:
                messages.append(_event_message(_MESSAGE_EVENTS[event.name], _event_body(event)))
            elif event.name == "gen_ai.content.prompt":
                prompt = json_value(event.attributes.get("gen_ai.prompt"))
                if isinstance(prompt, list):
                    messages += [m for m in prompt if isinstance(m, dict)]
    system = json_value(_attribute(span, a.SYSTEM_INSTRUCTIONS))
    if isinstance(system, list) and not any(m["role"] == "system" for m in messages):
        text = "".join(str(p.get("content", "")) for p in system if isinstance(p, dict))
        messages.insert(0, {"role": "system", "content": text})
    return link_tool_messages(messages)


def _finish(span: SpanRecord) -> str | None:
    reasons = _attribute(span, a.FINISH_REASONS)
    finish = reasons[0] if isinstance(reasons, list | tuple) and reasons else None
    return finish or span.attributes.get("llm.finish_reason")


def _choice(span: SpanRecord) -> tuple[dict[str, Any] | None, str | None]:
    """The answer from the first conventions' events: `gen_ai.choice`, else the JSON of
    `gen_ai.content.completion`."""
    for event in span.events:
        if event.name == CHOICE_EVENT:
            body = _event_body(event)
            body = body if isinstance(body, dict) else {}
            inner = body.get("message")
            inner = inner if isinstance(inner, dict) else {}
            merged = {**inner, "tool_calls": body.get("tool_calls") or inner.get("tool_calls")}
            return _event_message("assistant", merged), body.get("finish_reason")
        if event.name == "gen_ai.content.completion":
            completion = json_value(event.attributes.get("gen_ai.completion"))
            if isinstance(completion, list) and completion and isinstance(completion[0], dict):
                return dict(completion[0]), None
    return None, None


def output_message(span: SpanRecord) -> tuple[dict[str, Any] | None, str | None]:
    """The assistant message the model answered, and the finish reason."""
    finish = _finish(span)
    message: dict[str, Any] | None = None
    messages = a.unflatten_messages(a.LLM_OUTPUT, span.attributes)
    if not messages:
        messages = _unflatten_openllmetry(a.COMPLETION_PREFIX, span.attributes)
    if messages:
        message = messages[0]
        finish = finish or message.pop("finish_reason", None)
    else:
        semconv = json_value(_attribute(span, a.OUTPUT_MESSAGES))
        if isinstance(semconv, list) and semconv and isinstance(semconv[0], dict):
            (message, *_) = a.from_semconv_messages(semconv[0]) or [{}]
            finish = finish or semconv[0].get("finish_reason")
        else:
            message, from_event = _choice(span)
            finish = finish or from_event
    if message is None:
        return None, finish
    message["role"] = "assistant"
    message.setdefault("content", None)
    if finish is None:
        finish = "tool_calls" if message.get("tool_calls") else "stop"
    return message, finish


# --- tools, parameters, usage --------------------------------------------------------


def offered_tools(span: SpanRecord) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for i in range(10_000):
        schema = span.attributes.get(f"{a.LLM_TOOLS}.{i}.tool.json_schema")
        if schema is None:
            break
        value = json_value(schema)
        if isinstance(value, dict):
            tools.append(value)
    if tools:
        return tools
    for i in range(10_000):  # OpenLLMetry
        name = span.attributes.get(f"{a.LLM_FUNCTIONS}.{i}.name")
        if name is None:
            break
        function: dict[str, Any] = {"name": name}
        description = span.attributes.get(f"{a.LLM_FUNCTIONS}.{i}.description")
        if description is not None:
            function["description"] = description
        parameters = json_value(span.attributes.get(f"{a.LLM_FUNCTIONS}.{i}.parameters"))
        if isinstance(parameters, dict):
            function["parameters"] = parameters
        tools.append({"type": "function", "function": function})
    if tools:
        return tools
    definitions = json_value(_attribute(span, a.TOOL_DEFINITIONS))
    for item in definitions if isinstance(definitions, list | tuple) else []:
        if isinstance(item, dict) and "function" in item:
            tools.append(item)
        elif isinstance(item, dict):  # the conventions' flat form: type, name, …
            flat = {k: v for k, v in item.items() if k != "type"}
            tools.append({"type": "function", "function": flat})
    return tools


def request_params(span: SpanRecord) -> dict[str, Any]:
    params = json_value(span.attributes.get(a.LLM_PARAMS))
    if not isinstance(params, dict):
        params = {
            key: span.attributes[attr]
            for key, attr in a.REQUEST_PARAMS.items()
            if attr in span.attributes
        }
    return {k: v for k, v in params.items() if k not in ("model", "stream", "stream_options")}


def _first_number(span: SpanRecord, *keys: str) -> int | None:
    for key in keys:
        value = span.number(key)
        if value is not None:
            return value
    return None


def usage(span: SpanRecord) -> dict[str, int] | None:
    prompt = _first_number(span, a.LLM_PROMPT_TOKENS, a.INPUT_TOKENS, a.PROMPT_TOKENS_OLD)
    completion = _first_number(
        span, a.LLM_COMPLETION_TOKENS, a.OUTPUT_TOKENS, a.COMPLETION_TOKENS_OLD
    )
    if prompt is None and completion is None:
        return None
    total = _first_number(span, a.LLM_TOTAL_TOKENS, a.LLMETRY_TOTAL_TOKENS, a.TOTAL_TOKENS)
    return {
        "prompt_tokens": prompt or 0,
        "completion_tokens": completion or 0,
        "total_tokens": total if total is not None else (prompt or 0) + (completion or 0),
    }
