"""What counts as "the same request", at three named strictnesses, for every caller.

Replay checks the request the loop built against the recorded one, `serve-model` a client's
request against each recorded turn, the capture proxy (`workbench proxy`) which conversation a
request continues, and the field diff where two requests part. All of them read requests
here, both sides the same way, at one of these levels:

- every level reads a request as plain JSON values (`0` equals `0.0`) and leaves out its
  transport (`model`, `stream`, `stream_options`: how the answer travels, not what is asked);
- `exact` (replay, `serve-model --match exact`): every other field as sent, except that
  `null` equals absent and an assistant tool-call message without text may say so with a
  null, absent or empty `content` (older recordings sent null; the loop now sends "");
- `meaning` (`serve-model`'s default): clients that hold the same conversation send it in
  different bytes, and those agree too. LangChain re-serializes tool-call arguments
  (`{"path": "."}` for `{"path":"."}`), pydantic-ai adds `strict` and
  `additionalProperties: false` to every tool schema, the OpenAI Agents SDK sends
  `"strict": false`, many send `tool_choice: "auto"` or `parallel_tool_calls: true`, and some
  send text content as a list of text parts;
- `echo` (the proxy, one message at a time): a message as a client sends it back in its next
  request, by meaning, and an assistant message by its text and tool calls only.

Two requests are the same at a level when their `request_view`s are (`view_key` makes a view a
dictionary key, `view_digest` a short one); `field_diff.diff_values` of the two views names the
fields where they are not.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal, TypeAlias

from agent_core.messages import calls_without_text

Strictness: TypeAlias = Literal["exact", "meaning", "echo"]
# The levels a whole request is matched by (`serve-model --match`).
MatchMode: TypeAlias = Literal["meaning", "exact"]
MATCH_MODES: tuple[MatchMode, ...] = ("meaning", "exact")

# Request keys that describe the transport, not the conversation; clients differ in them.
TRANSPORT_KEYS = frozenset({"model", "stream", "stream_options"})

# Parameters a client may send with the API's default value; sent or not, they mean the same.
DEFAULT_PARAMS: dict[str, Any] = {
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "n": 1,
    "store": False,
    "logprobs": False,
    "presence_penalty": 0,
    "frequency_penalty": 0,
}
# Parameters that name the client's session or installation, not the conversation: Claude
# Code sends `metadata.user_id` with a device and session id, Codex `prompt_cache_key` and
# `client_metadata` with its session, turn and installation ids, all new on every run, so a
# replay of the same task would otherwise never match.
SESSION_PARAMS = frozenset({"metadata", "prompt_cache_key", "client_metadata"})
# Lines of a tool's output that change on every run of the same command: Codex's
# `exec_command` heads its output with a random `Chunk ID: 3f9a1c` and `Wall time: 0.2022
# seconds`. Read as the same, so a Codex session replays.
_VOLATILE_OUTPUT = re.compile(r"(?m)^(Chunk ID: |Wall time: )\S+(?: seconds)?$")
# Newer clients name the same limit differently.
PARAM_ALIASES = {"max_tokens": "max_completion_tokens"}
# Schema keys about how strictly the provider enforces a tool's schema, not what it accepts
# from a well-behaved model; clients add them by habit.
SCHEMA_KNOBS = frozenset({"strict", "$schema"})


def request_view(
    level: MatchMode, messages: list[Any], tools: list[Any], params: dict[str, Any]
) -> Any:
    """The plain value two requests are compared by at `level`."""
    asked = {k: v for k, v in params.items() if k not in TRANSPORT_KEYS}
    plain = _plain({"messages": messages, "tools": tools, "params": asked})
    if level == "exact":
        return {
            "messages": [message_view("exact", m) for m in plain["messages"]],
            "tools": without_nulls(plain["tools"]),
            "params": without_nulls(plain["params"]),
        }
    return {
        "messages": [message_view("meaning", m) for m in plain["messages"]],
        "tools": [tool_meaning(t) for t in plain["tools"]],
        "params": params_meaning(plain["params"]),
    }


def view_key(view: Any) -> str:
    """A view as a dictionary key: equal keys for equal views, whatever their key order."""
    return json.dumps(view, sort_keys=True, ensure_ascii=False)


def view_digest(view: Any) -> bytes:
    """`view_key` in 16 bytes, for an index that must not hold the views themselves
    (serve-model's of a long run's requests, each resending the history)."""
    return hashlib.blake2b(view_key(view).encode(), digest_size=16).digest()


def message_view(level: Strictness, message: Any) -> Any:
    """One message as `level` reads it."""
    if level == "exact":
        return one_text_form(without_nulls(message))
    meaning = _message_meaning(message)
    if level == "echo":
        return _echoed(meaning)
    return meaning


def message_digest(message: dict[str, Any]) -> bytes:
    """What identifies a message (`echo`) when a client sends the conversation back."""
    text = json.dumps(
        message_view("echo", message), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def joined_digest(digests: list[bytes]) -> bytes:
    # Fixed-size digests joined end to end: one digest names the whole list.
    return hashlib.blake2b(b"".join(digests), digest_size=16).digest()


def one_text_form(message: Any) -> Any:
    """An assistant tool-call message without text, in one form: no `content` (a null,
    absent or empty one all mean no text)."""
    if isinstance(message, dict) and calls_without_text(message):
        return {key: value for key, value in message.items() if key != "content"}
    return message


def without_nulls(value: Any) -> Any:
    # Clients differ in sending `"content": null` or leaving the key out; both mean the same.
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    # Through JSON so both sides are plain values, as a trace stores them; a whole number is
    # one number however it was spelled (`0.0` and `0`, as JSON reads them).
    return json.loads(json.dumps(value), parse_float=_number)


def _number(text: str) -> float | int:
    number = float(text)
    return int(number) if number.is_integer() else number


def _echoed(meaning: Any) -> Any:
    # Clients echo an answer with fields of their own (`reasoning_content`, `refusal`,
    # `annotations`, …) or without the provider's: an assistant message counts by its text
    # and tool calls only.
    if not isinstance(meaning, dict) or meaning.get("role") != "assistant":
        return meaning
    calls = meaning.get("tool_calls")
    return {
        "role": "assistant",
        "content": meaning.get("content"),
        "tool_calls": [
            {"id": call.get("id"), "function": call.get("function") or call.get("custom")}
            if isinstance(call, dict)
            else call
            for call in calls
        ]
        if isinstance(calls, list)
        else calls,
    }


def _message_meaning(message: Any) -> Any:
    if not isinstance(message, dict):
        return message
    out: dict[str, Any] = {}
    for key, value in without_nulls(message).items():
        if key == "content":
            value = _content_meaning(value)
            if message.get("role") == "tool" and isinstance(value, str):
                value = _VOLATILE_OUTPUT.sub(r"\1…", value)
            if value == "" and message.get("role") == "assistant":
                continue  # an assistant turn with only tool calls: "" and null alike
        elif key == "tool_calls":
            value = [_call_meaning(call) for call in value] if isinstance(value, list) else value
        if value == [] and key != "content":
            continue
        out[key] = value
    return out


def _content_meaning(content: Any) -> Any:
    # `[{"type": "text", "text": "a"}, …]` says what the string "a…" says.
    if isinstance(content, list) and all(
        isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
        for part in content
    ):
        return "".join(part["text"] for part in content)
    return content


def _call_meaning(call: Any) -> Any:
    if not isinstance(call, dict):
        return call
    # `index` is where a streamed call sat in its chunks; SDKs that assemble streams keep it.
    out = {k: v for k, v in call.items() if k != "index" and not (k == "type" and v == "function")}
    function = out.get("function")
    if isinstance(function, dict) and isinstance(function.get("arguments"), str):
        out["function"] = {**function, "arguments": _json_value(function["arguments"])}
    return out


def _json_value(text: str) -> Any:
    """Arguments as the JSON value they spell; text that is not JSON stays text."""
    if not text.strip():
        return {}
    try:
        return {"json": json.loads(text)}
    except ValueError:
        return {"text": text}


def tool_meaning(tool: Any) -> Any:
    tool = without_nulls(tool)
    if not isinstance(tool, dict) or not isinstance(tool.get("function"), dict):
        return tool
    function = {
        k: v for k, v in tool["function"].items() if k not in SCHEMA_KNOBS and v not in ("", [])
    }
    function["parameters"] = _schema_meaning(function.get("parameters") or {"type": "object"})
    if function["parameters"] == {"type": "object"}:
        function["parameters"] = {"type": "object", "properties": {}}
    return {**tool, "function": function}


def _schema_meaning(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_schema_meaning(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in SCHEMA_KNOBS or key == "title":
            continue
        if key == "additionalProperties" and isinstance(value, bool):
            continue
        if key == "required" and value == []:
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            # Keys here are property names (a property may be called "strict").
            out[key] = {name: _schema_meaning(sub) for name, sub in value.items()}
        else:
            out[key] = _schema_meaning(value)
    if isinstance(out.get("required"), list):
        out["required"] = sorted(out["required"], key=str)
    return out


def params_meaning(params: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in without_nulls(params).items():
        key = PARAM_ALIASES.get(key, key)
        if key in SESSION_PARAMS:
            continue
        if key in DEFAULT_PARAMS and value == DEFAULT_PARAMS[key]:
            continue
        out[key] = value
    return out
