"""A cheap, deterministic token estimate for prompts and tool schemas.

About 4 characters per token for Latin text and 1.5 for CJK, which is close enough to decide
when to trim history or stop on the budget without shipping a tokenizer per model. Provider
usage, when a response carries it, is recorded as the authoritative figure; this estimate is
only for decisions made before a response exists.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from agent_core.wire.chat import content_text

LATIN_CHARS_PER_TOKEN = 4.0
CJK_CHARS_PER_TOKEN = 1.5
# Role markers and separators the chat format adds around each message.
MESSAGE_OVERHEAD_TOKENS = 4


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return (
        0x3040 <= code <= 0x30FF  # Hiragana, Katakana
        or 0x3400 <= code <= 0x4DBF  # CJK Extension A
        or 0x4E00 <= code <= 0x9FFF  # CJK Unified Ideographs
        or 0xAC00 <= code <= 0xD7AF  # Hangul syllables
        or 0xF900 <= code <= 0xFAFF  # CJK Compatibility Ideographs
        or 0xFF00 <= code <= 0xFFEF  # full-width forms
    )


def estimate_text(text: str | None) -> int:
    if not text:
        return 0
    if text.isascii():  # the common case, without a per-character scan
        return int(len(text) / LATIN_CHARS_PER_TOKEN + 0.999)
    cjk = sum(1 for char in text if _is_cjk(char))
    other = len(text) - cjk
    return int(other / LATIN_CHARS_PER_TOKEN + cjk / CJK_CHARS_PER_TOKEN + 0.999)


def estimate_message(message: dict[str, Any]) -> int:
    tokens = MESSAGE_OVERHEAD_TOKENS + estimate_text(content_text(message.get("content")))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        tokens += estimate_text(function.get("name")) + estimate_text(function.get("arguments"))
        tokens += estimate_text(call.get("id"))
    if message.get("tool_call_id"):
        tokens += estimate_text(message["tool_call_id"])
    return tokens


def estimate_messages(messages: Iterable[dict[str, Any]]) -> int:
    return sum(estimate_message(message) for message in messages)


def estimate_tools(tools: Iterable[dict[str, Any]]) -> int:
    """Tool schemas are counted on their own: they are sent with every request."""
    return sum(estimate_text(json.dumps(tool, separators=(",", ":"))) for tool in tools)


def estimate_prompt(messages: Iterable[dict[str, Any]], tools: Iterable[dict[str, Any]]) -> int:
    return estimate_messages(messages) + estimate_tools(tools)


def usage_counts(usage: dict[str, Any] | None, prompt: int, answer: int) -> tuple[int, int, int]:
    """The input, output and total tokens of one model call: the provider's `usage` where
    it carries them, else the estimates of the prompt and of the answer (and their sum)."""
    usage = usage or {}
    spent_in = _reported_or(usage.get("prompt_tokens"), prompt)
    spent_out = _reported_or(usage.get("completion_tokens"), answer)
    return spent_in, spent_out, _reported_or(usage.get("total_tokens"), spent_in + spent_out)


def _reported_or(count: Any, estimate: int) -> int:
    return count if isinstance(count, int) and not isinstance(count, bool) else estimate
