"""Results sized for a model's context: long texts and long lists are cut, and every cut
is named in the answer's `truncated` list (where, and how much was left out), so a model
knows it saw part of something and which argument asks for more."""

from __future__ import annotations

import json
from typing import Any

MAX_TEXT = 2000  # characters of one text field
MAX_ITEMS = 100  # items of one list (as many as a page of the paged ones)
MAX_ANSWER = 60_000  # characters of one whole answer, as JSON
MAX_ERROR = 500  # characters of one error: it may quote an argument, never all of it


def bounded(
    value: dict[str, Any], *, max_text: int = MAX_TEXT, max_items: int = MAX_ITEMS
) -> dict[str, Any]:
    """`value` (a dict answer) with texts and lists cut; `truncated` lists the cuts. When
    the whole is still over `MAX_ANSWER`, texts are cut shorter until it fits (or are
    down to 100 characters each)."""
    while True:
        cuts: list[str] = []
        out: dict[str, Any] = _cut(value, "", cuts, max_text, max_items)
        out["truncated"] = cuts or False
        if len(json.dumps(out, default=str)) <= MAX_ANSWER or max_text <= 100:
            return out
        max_text //= 2  # lists stay whole: a page cut short would skip items


def _cut(value: Any, where: str, cuts: list[str], max_text: int, max_items: int) -> Any:
    if isinstance(value, str):
        if len(value) <= max_text:
            return value
        cuts.append(f"{where or 'text'}: {max_text} of {len(value)} characters shown")
        return value[:max_text] + f"…[{len(value) - max_text} more characters]"
    if isinstance(value, dict):
        return {
            key: _cut(item, f"{where}.{key}" if where else str(key), cuts, max_text, max_items)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        items = list(value)
        if len(items) > max_items:
            cuts.append(f"{where or 'list'}: {max_items} of {len(items)} items shown")
            items = items[:max_items]
        return [
            _cut(item, f"{where}[{i}]", cuts, max_text, max_items) for i, item in enumerate(items)
        ]
    return value


def error_line(message: str) -> str:
    """`message` as one line of at most MAX_ERROR characters: an error that quotes a long
    argument keeps its start and its end (what to do next), the middle cut and counted."""
    line = " ".join(message.split())
    if len(line) <= MAX_ERROR:
        return line
    keep = (MAX_ERROR - 40) // 2
    return f"{line[:keep]}…[{len(line) - 2 * keep} characters]…{line[-keep:]}"
