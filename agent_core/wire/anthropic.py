"""Anthropic Messages (`POST /v1/messages`), read and written.

Requests: `system` is the system message; each user message's `tool_result` blocks are
`tool` messages (answering the `tool_use` id), its other blocks the user message; an
assistant message's `text` blocks are its content, its `tool_use` blocks its tool calls
(arguments: the input's JSON) and its `thinking` its reasoning. Blocks the model produced
but nobody runs on the client (`server_tool_use`, `mcp_tool_use`, their results,
`redacted_thinking`) stay in the wire body and the stream events; `provider_calls` reads
the calls among them, with their results, for the trace to show. A stream is
assembled block by block (`input_json_delta` fragments joined into the call's argument
string, as sent), ends at `message_stop`; an `error` event ends it as an error. Encoders
write a whole message or its stream from a chat-shape answer, for servers that answer in
this format.
"""

from __future__ import annotations

import contextlib
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
    function_call,
    loop_response,
    result_text,
    usage,
)
from agent_core.wire.arguments import parse_arguments
from agent_core.wire.chat import arguments_text, text_of
from agent_core.wire.spans import WireSpan, placed

CONVERSATION_KEYS = frozenset({"model", "messages", "system", "tools", "stream"})
_TEXT = frozenset({"text"})
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}


def request_parts(body: dict[str, Any]) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """A request's messages (chat shape), tools (chat shape) and other parameters."""
    messages: list[Any] = []
    system = body.get("system")
    if system:
        messages.append(
            {"role": "system", "content": system if isinstance(system, str) else text_of(system)}
        )
    for message in body.get("messages") or []:
        messages += _from_wire(message)
    tools = [tool_from_wire(tool) for tool in body.get("tools") or []]
    params = {k: v for k, v in body.items() if k not in CONVERSATION_KEYS}
    return messages, tools, params


def spans(body: dict[str, Any]) -> list[WireSpan]:
    """Each message of a request's `messages` with the chat messages it reads as; and a
    `system` of blocks (cache marks and all) as the system message it reads as."""
    found = [
        WireSpan("anthropic", tuple(_from_wire(message)), (message,))
        for message in body.get("messages") or []
        if isinstance(message, dict)
    ]
    system = body.get("system")
    if isinstance(system, list) and system:
        # Not a message of the format: `request_body` puts it back as the body's `system`.
        read_as = request_parts({"system": system})[0]
        found.insert(
            0, WireSpan("anthropic", tuple(read_as), ({"role": "system", "content": system},))
        )
    return found


def answer_span(message: dict[str, Any], body: dict[str, Any]) -> WireSpan:
    """A whole answer as the assistant message it is sent back as, read as `message`."""
    content = body.get("content")
    return WireSpan("anthropic", (message,), ({"role": "assistant", "content": content},))


def tool_from_wire(tool: Any) -> Any:
    if isinstance(tool, dict) and "input_schema" in tool and tool.get("type") in (None, "custom"):
        return chat_tool(tool.get("name"), tool.get("description"), tool.get("input_schema"))
    return tool  # a server tool (web_search, code_execution, …) as sent


def _from_wire(message: Any) -> list[Any]:
    if not isinstance(message, dict):
        return [message]
    role, content = message.get("role"), message.get("content")
    if role == "assistant":
        return [
            assistant_from_blocks(
                content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
            )
        ]
    if not isinstance(content, list):
        return [{"role": role or "user", "content": content}]
    out: list[Any] = []
    rest: list[Any] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            result = block.get("content")
            tool_message = {
                "role": "tool",
                "tool_call_id": block.get("tool_use_id"),
                "content": result if isinstance(result, str) else text_of(result),
            }
            if block.get("is_error"):
                tool_message["is_error"] = True
            out.append(tool_message)
        else:
            rest.append(block)
    if rest:
        out.append(
            {"role": role or "user", "content": text_of(rest) if all_text(rest, _TEXT) else rest}
        )
    return out


def assistant_from_blocks(
    blocks: list[Any], arguments: dict[int, str] | None = None
) -> dict[str, Any]:
    """The chat-shape assistant message of a list of content blocks; `arguments` holds the
    argument strings of streamed `tool_use` blocks by position, as they were sent."""
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[dict[str, Any]] = []
    for position, block in enumerate(blocks):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "thinking":
            thinking.append(str(block.get("thinking") or ""))
        elif kind == "tool_use":
            raw = (arguments or {}).get(position)
            calls.append(
                function_call(
                    str(block.get("id") or ""),
                    str(block.get("name") or ""),
                    raw if raw is not None else block.get("input"),
                )
            )
    return assistant_message(
        "".join(texts) or None, calls, "\n\n".join(t for t in thinking if t) or None
    )


# Blocks of calls the provider runs itself; each is answered by a `…_tool_result` block.
PROVIDER_CALL_BLOCKS = frozenset({"server_tool_use", "mcp_tool_use"})


def provider_calls(body: dict[str, Any]) -> list[ProviderCall]:
    """The tool calls a whole message's content holds that the provider ran (web search,
    code execution, a remote MCP server), in order, each with its result block's text."""
    blocks = [b for b in body.get("content") or [] if isinstance(b, dict)]
    results = {
        b.get("tool_use_id"): b
        for b in blocks
        if str(b.get("type") or "").endswith("_tool_result") and b.get("type") != "tool_result"
    }
    calls: list[ProviderCall] = []
    for block in blocks:
        if block.get("type") not in PROVIDER_CALL_BLOCKS:
            continue
        call_id = str(block.get("id") or "")
        name = str(block.get("name") or "")
        if block.get("server_name"):
            name = f"{block['server_name']}.{name}"
        found = results.get(call_id)
        content = found.get("content") if found else None
        error = None
        if isinstance(content, dict) and "error_code" in content:
            error = str(content["error_code"])
        elif found is not None and found.get("is_error"):
            error = result_text(content) or "error"
        calls.append(
            ProviderCall(
                call_id,
                name,
                arguments_text(block.get("input")),
                None if found is None else result_text(content),
                error,
            )
        )
    return calls


def answer_from_body(body: dict[str, Any], arguments: dict[int, str] | None = None) -> WireAnswer:
    """A whole message (what a non-streamed call returns)."""
    if (
        not isinstance(body, dict)
        or body.get("type") not in ("message", None)
        or not isinstance(body.get("content"), list)
    ):
        raise WireError("the answer is not an Anthropic message")
    message = assistant_from_blocks(body["content"], arguments)
    stop = body.get("stop_reason")
    raw = _object(body.get("usage"))
    # Anthropic counts cached input apart; all of it was the prompt.
    inputs = [
        raw.get(key)
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    counted = [n for n in inputs if isinstance(n, int)]
    prompt = sum(counted) if isinstance(inputs[0], int) else None
    return WireAnswer(
        message=message,
        finish_reason=_STOP_REASONS.get(stop, stop) if isinstance(stop, str) else None,
        usage=usage(prompt, raw.get("output_tokens")),
        body=body,
    )


class AnthropicAssembler:
    """Assembles a stream of Messages events (see `WireAssembler`)."""

    def __init__(self) -> None:
        self.saw_output = False
        self.done = False
        self.error: str | None = None
        self._message: dict[str, Any] | None = None
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}  # input_json_delta fragments by block index

    @property
    def answered(self) -> bool:
        return self.done

    def add(self, event: dict[str, Any]) -> str:
        kind = event.get("type")
        index = event.get("index")
        delta = event.get("delta")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            if self._message is None:  # a second start (a relay's glitch) changes nothing
                self._message = dict(event["message"])
        elif kind == "content_block_start" and isinstance(index, int):
            block = event.get("content_block")
            self._blocks[index] = dict(block) if isinstance(block, dict) else {}
        elif kind == "content_block_delta" and isinstance(index, int):
            self._delta(self._blocks.setdefault(index, {}), index, delta or {})
            if isinstance(delta, dict) and delta.get("type") == "text_delta":
                return str(delta.get("text") or "")
        elif kind == "message_delta":
            message = self._message if self._message is not None else {}
            self._message = message
            if isinstance(delta, dict):
                message.update(
                    {k: v for k, v in delta.items() if k in ("stop_reason", "stop_sequence")}
                )
            if isinstance(event.get("usage"), dict):
                message["usage"] = {**(message.get("usage") or {}), **event["usage"]}
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            error = _object(event.get("error")) or event
            self.error = str(error.get("message") or error.get("type") or "error event")
            self.done = True
        return ""

    def _delta(self, block: dict[str, Any], index: int, delta: dict[str, Any]) -> None:
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = str(block.get("text") or "") + str(delta.get("text") or "")
            self.saw_output = True
        elif kind == "input_json_delta":
            self._json.setdefault(index, []).append(str(delta.get("partial_json") or ""))
            self.saw_output = True
        elif kind == "thinking_delta":
            block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking") or "")
            self.saw_output = True
        elif kind == "signature_delta":
            block["signature"] = str(block.get("signature") or "") + str(
                delta.get("signature") or ""
            )
        elif kind == "citations_delta" and isinstance(delta.get("citation"), dict):
            block["citations"] = [*(block.get("citations") or []), delta["citation"]]

    def response(self) -> AssembledResponse:
        return loop_response(self.result(), answer_span)

    def result(self) -> WireAnswer:
        if self.error is not None:
            raise WireError(self.error, "stream_error")
        if self._message is None:
            raise WireError("no event of the stream started a message")
        if not self.done:
            raise WireError("the stream ended before message_stop")
        blocks: list[dict[str, Any]] = []
        arguments: dict[int, str] = {}
        for position, index in enumerate(sorted(self._blocks)):
            block = self._blocks[index]
            if index in self._json:
                raw = "".join(self._json[index])
                arguments[position] = raw
                # Unparseable arguments stay as sent (in `arguments`); the input stays empty.
                with contextlib.suppress(ValueError):
                    block = {**block, "input": json.loads(raw) if raw.strip() else {}}
            blocks.append(block)
        body = {**self._message, "content": blocks}
        return answer_from_body(body, arguments)


def whole_body(
    message: dict[str, Any],
    finish_reason: str | None,
    counts: dict[str, Any] | None,
    *,
    model: str,
    response_id: str,
) -> dict[str, Any]:
    """A whole message answering with a chat-shape assistant message."""
    content: list[dict[str, Any]] = []
    if message.get("reasoning_content"):
        content.append(
            {"type": "thinking", "thinking": message["reasoning_content"], "signature": ""}
        )
    text = message.get("content")
    if isinstance(text, list):
        text = text_of(text)
    if text:
        content.append({"type": "text", "text": text})
    content += [_tool_use(call) for call in message.get("tool_calls") or []]
    stops = {
        "stop": "end_turn",
        "tool_calls": "tool_use",
        "length": "max_tokens",
        "content_filter": "refusal",
    }
    counts = counts or {}
    return {
        "id": response_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stops.get(finish_reason or "stop", finish_reason),
        "stop_sequence": None,
        "usage": {
            "input_tokens": counts.get("prompt_tokens", 0),
            "output_tokens": counts.get("completion_tokens", 0),
        },
    }


def stream_events(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The events that stream a whole message, as the API sends them."""
    usage_counts = body.get("usage") or {}
    started = {
        **body,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage_counts, "output_tokens": 0},
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": started}]
    for index, block in enumerate(body.get("content") or []):
        kind = block.get("type")
        if kind == "text":
            events.append(_start(index, {**block, "text": ""}))
            events.append(_delta(index, {"type": "text_delta", "text": block.get("text", "")}))
        elif kind in ("tool_use", *PROVIDER_CALL_BLOCKS):
            events.append(_start(index, {**block, "input": {}}))
            partial = json.dumps(block.get("input") or {}, ensure_ascii=False)
            events.append(_delta(index, {"type": "input_json_delta", "partial_json": partial}))
        elif kind == "thinking":
            events.append(_start(index, {**block, "thinking": "", "signature": ""}))
            events.append(
                _delta(index, {"type": "thinking_delta", "thinking": block.get("thinking", "")})
            )
            events.append(
                _delta(index, {"type": "signature_delta", "signature": block.get("signature", "")})
            )
        else:
            events.append(_start(index, block))
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": body.get("stop_reason"),
                "stop_sequence": body.get("stop_sequence"),
            },
            "usage": {"output_tokens": usage_counts.get("output_tokens", 0)},
        }
    )
    events.append({"type": "message_stop"})
    return events


def _start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "invalid_request_error",
    410: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(status: int, message: str, **extra: Any) -> dict[str, Any]:
    """An error answer as Anthropic clients read it."""
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message, **extra}}


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# Anthropic requires `max_tokens`; what the agent asks for when its params set none.
DEFAULT_MAX_TOKENS = 4096


def request_body(
    model: str,
    messages: list[Any],
    tools: list[Any],
    params: dict[str, Any],
    *,
    stream: bool,
    known: Sequence[WireSpan] = (),
) -> dict[str, Any]:
    """The Messages request that asks what a chat-shape request asks (the agent's own calls
    with `--api anthropic`, a fork's): system messages as `system`, assistant tool calls as
    `tool_use` blocks, consecutive tool results as one user message of `tool_result` blocks;
    messages a `known` span reads as go as that span's messages, exactly as they were."""
    body: dict[str, Any] = {"model": model}
    system: list[str] = []
    system_blocks: list[Any] = []  # a `system` of blocks, as a known span had it
    out: list[dict[str, Any]] = []
    for items, run in placed(messages, known, "anthropic"):
        if items is not None:
            for item in copy.deepcopy(list(items)):  # a fresh tool result may join the last one
                if item.get("role") == "system":
                    system_blocks += item["content"]
                else:
                    out.append(item)
            continue
        _encode(run, system, out)
    if system_blocks:
        body["system"] = system_blocks + [{"type": "text", "text": text} for text in system]
    elif system:
        body["system"] = "\n\n".join(system)
    body["messages"] = out
    if tools:
        body["tools"] = [_tool_to_wire(tool) for tool in tools]
    body["max_tokens"] = DEFAULT_MAX_TOKENS
    body.update({k: v for k, v in params.items() if k != "stream_options"})
    if "max_completion_tokens" in body:
        body["max_tokens"] = body.pop("max_completion_tokens")
    body["stream"] = stream
    return body


def _encode(messages: list[Any], system: list[str], out: list[dict[str, Any]]) -> None:
    """Chat-shape messages written as Messages messages onto `out` (system text to `system`)."""
    for message in messages:
        role, content = message.get("role"), message.get("content")
        text = content if isinstance(content, str) else text_of(content)
        if role in ("system", "developer"):
            system.append(text)
        elif role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id"),
                "content": text,
            }
            last = out[-1] if out else None
            if (
                last
                and last["role"] == "user"
                and isinstance(last["content"], list)
                and all(b.get("type") == "tool_result" for b in last["content"])
            ):
                last["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            blocks += [_tool_use(call) for call in message.get("tool_calls") or []]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": content})


def _tool_to_wire(tool: Any) -> Any:
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(function, dict):
        return tool
    out = {
        "name": function.get("name"),
        "input_schema": function.get("parameters") or {"type": "object"},
    }
    if function.get("description") is not None:
        out["description"] = function["description"]
    return out


def _tool_use(call: dict[str, Any]) -> dict[str, Any]:
    """A chat-shape tool call as a `tool_use` block; its arguments read by the one parser
    (`wire.arguments`), and arguments it cannot use sent as no input."""
    function = call.get("function") or {}
    parsed = parse_arguments(arguments_text(function.get("arguments")))
    return {
        "type": "tool_use",
        "id": call.get("id"),
        "name": function.get("name"),
        "input": parsed.value if parsed.value is not None else {},
    }
