"""Tool-call arguments: parse them, and make one repair attempt when they are not JSON.

Models send broken argument strings in a few recurring ways: trailing text after the object,
Python-style single quotes, a missing closing brace, the same object twice, a markdown code
fence, a trailing comma. `parse_arguments` tries plain JSON first, then one repair pass; if
that also fails the caller sends the model an error result asking it to re-send the call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*(.*?)\s*```\s*$", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_CLOSERS = {"{": "}", "[": "]"}


@dataclass(frozen=True)
class ParsedArguments:
    value: dict[str, Any] | None  # None when the arguments could not be used
    error: str | None = None  # short and model-readable, when value is None
    repaired: bool = False
    repaired_text: str | None = None  # the JSON that was actually parsed, when repaired


def json_problem(exc: json.JSONDecodeError) -> str:
    """ "Expecting value at position 3": the decoder's words and where, said once (some of
    its messages, such as "Unterminated string starting at", already end in "at")."""
    joiner = " " if exc.msg.endswith(" at") else " at "
    return f"{exc.msg}{joiner}position {exc.pos}"


def parse_arguments(raw: str | None) -> ParsedArguments:
    """Parse a raw argument string; null or blank arguments mean no arguments."""
    if raw is None or not raw.strip():
        return ParsedArguments({})
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        first_error = f"arguments are not valid JSON ({json_problem(exc)})"
    else:
        return _object_or_error(value, repaired=False, text=None)
    repaired = repair_json(raw)
    if repaired is None:
        return ParsedArguments(
            None, first_error + "; please send the tool call again with valid JSON"
        )
    value, text = repaired
    return _object_or_error(value, repaired=True, text=text)


def _object_or_error(value: Any, *, repaired: bool, text: str | None) -> ParsedArguments:
    if isinstance(value, dict):
        return ParsedArguments(value, repaired=repaired, repaired_text=text)
    kind = type(value).__name__ if value is not None else "null"
    return ParsedArguments(
        None, f"arguments must be a JSON object, got {kind}; please send the tool call again"
    )


def repair_json(raw: str) -> tuple[Any, str] | None:
    """One repair pass; returns the parsed value and the JSON text it came from, or None."""
    text = raw.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    start = text.find("{")
    if start > 0:
        text = text[start:]  # leading chatter before the object
    text = _requote(text)
    text = _TRAILING_COMMA.sub(r"\1", text)
    text = _close_open(text)
    try:
        # raw_decode stops after the first complete value: drops trailing garbage and a
        # second, duplicated object.
        value, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        return None
    return value, text[:end]


def _requote(text: str) -> str:
    """Turn single-quoted strings into JSON strings; leave double-quoted ones alone."""
    if "'" not in text:
        return text
    out: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote is None:
            if ch in "\"'":
                quote = ch
                out.append('"')
            else:
                out.append(ch)
        elif ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append(nxt if (quote == "'" and nxt == "'") else ch + nxt)
            i += 1
        elif ch == quote:
            quote = None
            out.append('"')
        elif ch == '"':  # a double quote inside a single-quoted string
            out.append('\\"')
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _close_open(text: str) -> str:
    """Append whatever closes an unterminated string and any open braces or brackets."""
    stack: list[str] = []
    in_string = False
    escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
        elif ch in "}]" and stack and stack[-1] == ch:
            stack.pop()
    if not in_string and not stack:
        return text
    tail = '"' if in_string else ""
    return text + tail + "".join(reversed(stack))
