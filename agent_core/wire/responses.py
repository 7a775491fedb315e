"""The OpenAI Responses API (`POST /v1/responses`), read and written.

Requests: `instructions` is the system message; `input` (a string, or a list of items) is
read into chat-shape messages: user and system items as they are, the items a model
produced (assistant `message`, `function_call`, `reasoning`) as one assistant message with
its tool calls (the id is the item's `call_id`, which `function_call_output` answers), and
each `function_call_output` as a `tool` message. Answers: the `output` items in the same
way; a stream's last event, `response.completed` (or `incomplete`, `failed`), carries the
whole response, so the stream is assembled from it, with the items seen on the way as a
fallback. Encoders write a whole response or its stream of events from a chat-shape answer,
for servers that answer in this format.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from agent_core.wire.answer import (
    AssembledResponse,
    ProviderCall,
    WireAnswer,
    WireError,
    all_text,
    assistant_message,
    chat_tool,
    custom_call,
    function_call,
    loop_response,
    result_text,
    usage,
)
from agent_core.wire.chat import text_of
from agent_core.wire.spans import WireSpan, placed

# Request keys that carry the conversation or the transport; the rest are parameters.
CONVERSATION_KEYS = frozenset(
    {"model", "input", "instructions", "tools", "stream", "stream_options"}
)
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
_MODEL_ITEMS = frozenset({"function_call", "custom_tool_call", "reasoning"})
# The results a client sends back for the calls it ran.
_OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})
TERMINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


def request_parts(body: dict[str, Any]) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """A request's messages (chat shape), tools (chat shape) and other parameters."""
    messages: list[Any] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    messages += input_messages(body.get("input"))
    tools = [tool_from_wire(tool) for tool in body.get("tools") or []]
    params = {k: v for k, v in body.items() if k not in CONVERSATION_KEYS}
    return messages, tools, params


def tool_from_wire(tool: Any) -> Any:
    if isinstance(tool, dict) and tool.get("type") == "function":
        return chat_tool(
            tool.get("name"),
            tool.get("description"),
            tool.get("parameters"),
            strict=tool.get("strict"),
        )
    return tool  # a hosted tool (web_search, file_search, mcp, …) as sent


def input_messages(items: Any) -> list[Any]:
    """Input (or output) items as chat-shape messages."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return [message for _, message in _read_items(items)]


def spans(body: dict[str, Any]) -> list[WireSpan]:
    """A request's input items, each with the chat message it reads as (a model's turn:
    its items together)."""
    items = body.get("input")
    if not isinstance(items, list):
        return []
    return [
        WireSpan("responses", (message,), tuple(read))
        for read, message in _read_items(items)
        if read and isinstance(message, dict)
    ]


def answer_span(message: dict[str, Any], body: dict[str, Any]) -> WireSpan:
    """A whole response's output items, sent back as input items, read as `message`."""
    output = [item for item in body.get("output") or [] if isinstance(item, dict)]
    return WireSpan("responses", (message,), tuple(output))


def _read_items(items: Any) -> list[tuple[list[Any], Any]]:
    """Input (or output) items, each run that makes one chat-shape message with it."""
    messages: list[tuple[list[Any], Any]] = []
    turn: list[dict[str, Any]] = []  # items of the model's turn being read

    def close_turn() -> None:
        if turn:
            messages.append((list(turn), _assistant(turn)))
            turn.clear()

    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            close_turn()
            messages.append(([], item))
            continue
        kind = item.get("type")
        role = item.get("role")
        if kind in _OUTPUT_ITEMS:
            close_turn()
            output = item.get("output")
            text = output if isinstance(output, str) else text_of(output)
            tool = {"role": "tool", "tool_call_id": item.get("call_id"), "content": text}
            messages.append(([item], tool))
        elif (
            role == "assistant"
            or kind in _MODEL_ITEMS
            or (kind and kind != "message" and role is None)
        ):
            turn.append(item)
        else:
            close_turn()
            content = item.get("content")
            if all_text(content, _TEXT_PARTS):
                content = text_of(content)
            messages.append(([item], {"role": role or "user", "content": content}))
    close_turn()
    return messages


def _assistant(items: list[dict[str, Any]]) -> dict[str, Any]:
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type")
        if kind == "function_call":
            call_id = str(item.get("call_id") or item.get("id") or "")
            calls.append(function_call(call_id, str(item.get("name") or ""), item.get("arguments")))
        elif kind == "custom_tool_call":
            call_id = str(item.get("call_id") or item.get("id") or "")
            calls.append(custom_call(call_id, str(item.get("name") or ""), item.get("input")))
        elif kind == "reasoning":
            summary = item.get("summary")
            reasoning += [text_of([part]) for part in summary or [] if isinstance(part, dict)]
        elif item.get("role") == "assistant":
            texts.append(text_of(item.get("content")))
    return assistant_message(
        "".join(texts) or None, calls, "\n\n".join(r for r in reasoning if r) or None
    )


# Output items of hosted tools: the provider ran them within the response.
PROVIDER_CALL_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "mcp_call",
        "image_generation_call",
    }
)


def provider_calls(body: dict[str, Any]) -> list[ProviderCall]:
    """The hosted tool calls among a response's output items, in order, with what the
    response says of their results."""
    calls: list[ProviderCall] = []
    for item in body.get("output") or []:
        if not isinstance(item, dict) or item.get("type") not in PROVIDER_CALL_ITEMS:
            continue
        kind = str(item["type"])
        name = str(item.get("name") or kind.removesuffix("_call"))
        if item.get("server_label"):
            name = f"{item['server_label']}.{name}"
        arguments = item.get("arguments", item.get("action", item.get("code", item.get("queries"))))
        result = item.get("output", item.get("results", item.get("outputs")))
        error = item.get("error") or (None if item.get("status") != "failed" else "failed")
        calls.append(
            ProviderCall(
                str(item.get("id") or ""),
                name,
                arguments if isinstance(arguments, str) else dumps(arguments or {}),
                None if result is None else result_text(result),
                None if error is None else str(error),
            )
        )
    return calls


def answer_from_body(body: dict[str, Any]) -> WireAnswer:
    """A whole response (what a non-streamed call returns, or `response.completed` holds)."""
    if not isinstance(body, dict) or not isinstance(body.get("output", []), list):
        raise WireError("the answer is not a Responses API response")
    if body.get("object") not in (None, "response") and "output" not in body:
        raise WireError("the answer is not a Responses API response")
    output = body.get("output") or []
    messages = input_messages([item for item in output if isinstance(item, dict)])
    message = (
        messages[0]
        if messages and messages[0].get("role") == "assistant"
        else assistant_message(None, [], None)
    )
    raw = _object(body.get("usage"))
    return WireAnswer(
        message=message,
        finish_reason=_finish_reason(body, message),
        usage=usage(raw.get("input_tokens"), raw.get("output_tokens"), raw.get("total_tokens")),
        body=body,
    )


def _finish_reason(body: dict[str, Any], message: dict[str, Any]) -> str:
    if body.get("status") == "incomplete":
        details = body.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return "content_filter" if reason == "content_filter" else "length"
    return "tool_calls" if message.get("tool_calls") else "stop"


class ResponsesAssembler:
    """Assembles a stream of Responses API events (see `WireAssembler`)."""

    def __init__(self) -> None:
        self.saw_output = False
        self.done = False
        self.error: str | None = None
        self._response: dict[str, Any] | None = None  # from the last event that held it
        self._items: dict[int, dict[str, Any]] = {}
        self._final = False

    @property
    def answered(self) -> bool:
        return self.done

    def add(self, event: dict[str, Any]) -> str:
        kind = event.get("type")
        if not isinstance(kind, str):
            return ""  # not an event of this API (a provider's extra payload)
        response = event.get("response")
        if isinstance(response, dict):
            self._response = response
        if kind.endswith(".delta"):
            self.saw_output = True
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item, index = event.get("item"), event.get("output_index")
            if isinstance(item, dict):
                self._items[index if isinstance(index, int) else len(self._items)] = item
                if item.get("type") == "function_call" or kind.endswith(".done"):
                    self.saw_output = self.saw_output or item.get("type") != "reasoning"
        elif kind == "error":
            error = _object(event.get("error")) or event
            self.error = str(error.get("message") or error.get("code") or "error event")
            # The answer is over: clients (the openai SDK) stop reading at this event.
            self.done = True
        if kind in TERMINAL_EVENTS:
            self.done = self._final = True
            if kind == "response.failed":
                failure = _object(_object(response).get("error"))
                self.error = self.error or str(failure.get("message") or "the response failed")
        return str(event.get("delta") or "") if kind == "response.output_text.delta" else ""

    def response(self) -> AssembledResponse:
        return loop_response(self.result(), answer_span)

    def result(self) -> WireAnswer:
        if self.error is not None:
            raise WireError(self.error, "stream_error")
        if self._response is None:
            raise WireError("no event of the stream carried a response")
        body = dict(self._response)
        if not body.get("output") and self._items:
            body["output"] = [self._items[i] for i in sorted(self._items)]
        if not self._final:
            raise WireError("the stream ended before response.completed")
        return answer_from_body(body)


def whole_body(
    message: dict[str, Any],
    finish_reason: str | None,
    counts: dict[str, Any] | None,
    *,
    model: str,
    response_id: str,
) -> dict[str, Any]:
    """A whole response answering with a chat-shape assistant message."""
    output: list[dict[str, Any]] = []
    if message.get("reasoning_content"):
        output.append(
            {
                "type": "reasoning",
                "id": f"rs_{response_id}",
                "summary": [{"type": "summary_text", "text": message["reasoning_content"]}],
            }
        )
    text = message.get("content")
    if isinstance(text, list):
        text = text_of(text)
    if text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{response_id}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for number, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        if call.get("type") == "custom":
            output.append(_custom_item(call, f"ctc_{response_id}_{number}"))
            continue
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{response_id}_{number}",
                "call_id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments") or "",
                "status": "completed",
            }
        )
    counts = counts or {}
    prompt, completion = counts.get("prompt_tokens", 0), counts.get("completion_tokens", 0)
    return {
        "id": response_id,
        "object": "response",
        "created_at": 0,
        "status": "incomplete" if finish_reason == "length" else "completed",
        "incomplete_details": {"reason": "max_output_tokens"}
        if finish_reason == "length"
        else None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": counts.get("total_tokens", prompt + completion),
        },
    }


def _custom_item(call: dict[str, Any], item_id: str | None) -> dict[str, Any]:
    custom = call.get("custom") or {}
    item = {
        "type": "custom_tool_call",
        "call_id": call.get("id"),
        "name": custom.get("name"),
        "input": custom.get("input") or "",
    }
    return {"id": item_id, **item, "status": "completed"} if item_id else item


def stream_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The events that stream a whole response, as the API sends them."""
    started = {**body, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    for index, item in enumerate(body.get("output") or []):
        kind = item.get("type")
        if kind == "message":
            events.append(
                _item_event("added", index, {**item, "status": "in_progress", "content": []})
            )
            for part_index, part in enumerate(item.get("content") or []):
                where = {
                    "item_id": item.get("id"),
                    "output_index": index,
                    "content_index": part_index,
                }
                empty = {**part, "text": ""} if "text" in part else part
                events.append({"type": "response.content_part.added", **where, "part": empty})
                if part.get("type") == "output_text":
                    text = part.get("text", "")
                    events.append({"type": "response.output_text.delta", **where, "delta": text})
                    events.append({"type": "response.output_text.done", **where, "text": text})
                events.append({"type": "response.content_part.done", **where, "part": part})
        elif kind == "function_call":
            events.append(
                _item_event("added", index, {**item, "status": "in_progress", "arguments": ""})
            )
            where = {"item_id": item.get("id"), "output_index": index}
            arguments = item.get("arguments", "")
            events.append(
                {"type": "response.function_call_arguments.delta", **where, "delta": arguments}
            )
            events.append(
                {"type": "response.function_call_arguments.done", **where, "arguments": arguments}
            )
        else:
            events.append(_item_event("added", index, item))
        events.append(_item_event("done", index, item))
    last = "response.incomplete" if body.get("status") == "incomplete" else "response.completed"
    events.append({"type": last, "response": body})
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


def _item_event(which: str, index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": f"response.output_item.{which}", "output_index": index, "item": item}


def error_body(message: str, kind: str, **extra: Any) -> dict[str, Any]:
    """An error answer as OpenAI clients read it."""
    return {"error": {"message": message, "type": kind, **extra}}


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def request_body(
    model: str,
    messages: list[Any],
    tools: list[Any],
    params: dict[str, Any],
    *,
    stream: bool,
    known: Sequence[WireSpan] = (),
) -> dict[str, Any]:
    """The Responses request that asks what a chat-shape request asks (the agent's own
    calls with `--api responses`, a fork's): the first system message as `instructions`,
    assistant tool calls as `function_call` items, tool results as `function_call_output`
    items; messages a `known` span reads as go as that span's items, exactly as they were."""
    body: dict[str, Any] = {"model": model}
    items: list[dict[str, Any]] = []
    custom_ids = {
        call.get("id")
        for message in messages
        for call in message.get("tool_calls") or []
        if isinstance(call, dict) and call.get("type") == "custom"
    }
    for known_items, run in placed(messages, known, "responses"):
        if known_items is not None:
            items += copy.deepcopy(list(known_items))
            continue
        _encode(run, body, items, custom_ids)
    body["input"] = items
    if tools:
        body["tools"] = [_tool_to_wire(tool) for tool in tools]
    body.update(params)
    body["stream"] = stream
    return body


def _encode(
    messages: list[Any], body: dict[str, Any], items: list[dict[str, Any]], custom_ids: set[Any]
) -> None:
    """Chat-shape messages written as input items onto `items` (the first system message,
    when nothing came before it, as the body's `instructions`)."""
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "system" and "instructions" not in body and not items:
            body["instructions"] = text_of(content) if not isinstance(content, str) else content
        elif role == "tool":
            output = content if isinstance(content, str) else text_of(content)
            call_id = message.get("tool_call_id")
            kind = "custom_tool_call_output" if call_id in custom_ids else "function_call_output"
            items.append(
                {
                    "type": kind,
                    "call_id": call_id,
                    "output": output,
                }
            )
        elif role == "assistant":
            text = content if isinstance(content, str) else text_of(content)
            if text:
                items.append({"role": "assistant", "content": text})
            for call in message.get("tool_calls") or []:
                if call.get("type") == "custom":
                    items.append(_custom_item(call, None))
                    continue
                function = call.get("function") or {}
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.get("id"),
                        "name": function.get("name"),
                        "arguments": function.get("arguments") or "",
                    }
                )
        else:
            items.append({"role": role, "content": content})


def _tool_to_wire(tool: Any) -> Any:
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(function, dict):
        return tool
    out = {
        "type": "function",
        "name": function.get("name"),
        "parameters": function.get("parameters"),
    }
    if function.get("description") is not None:
        out["description"] = function["description"]
    if function.get("strict") is not None:
        out["strict"] = function["strict"]
    return out


def continued(previous: list[Any], new: list[Any]) -> list[Any]:
    """The whole conversation of a request that sends only `new` after `previous` (the
    conversation up to the answer it names). Instructions are not carried over from a
    previous response: the request's own system message (from its `instructions`) stands
    in for the earlier one."""
    if new and _is_system(new[0]):
        earlier = previous[1:] if previous and _is_system(previous[0]) else previous
        return [new[0], *earlier, *new[1:]]
    return [*previous, *new]


def _is_system(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "system"
