"""Keeping the prompt inside the context window by trimming whole rounds.

When the estimated prompt passes 70% of the context window, the history is rebuilt as:
the system messages and the task (the first user message), one summary message folding the
text the assistant wrote in the dropped rounds, then the last `keep_rounds` complete rounds.
A round is one assistant message plus the tool messages answering its calls (or one user
message), so a tool call and its results are always kept or dropped together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_core.tokens import estimate_messages

TRIM_THRESHOLD = 0.7
SUMMARY_PREFIX = "Summary of earlier turns (tool calls and results were dropped to save space):"
SUMMARY_CHARS = 2_000  # the summary is itself bounded, or it would grow without end


@dataclass(frozen=True)
class Trim:
    messages: list[dict[str, Any]]
    tokens_before: int
    tokens_after: int
    rounds_kept: int
    rounds_dropped: int
    summary: str | None


def needs_trim(prompt_tokens: int, context_window: int) -> bool:
    return prompt_tokens > TRIM_THRESHOLD * context_window


def split_rounds(
    messages: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """Split into the head (system messages and the task) and the atomic rounds after it."""
    head: list[dict[str, Any]] = []
    index = 0
    seen_task = False
    while index < len(messages):
        message = messages[index]
        if message.get("role") == "system" or (
            message.get("role") == "user" and not seen_task and not _is_summary(message)
        ):
            seen_task = seen_task or message.get("role") == "user"
            head.append(message)
            index += 1
            continue
        break
    rounds: list[list[dict[str, Any]]] = []
    for message in messages[index:]:
        if message.get("role") == "tool" and rounds:
            rounds[-1].append(message)  # results stay with the call that asked for them
        else:
            rounds.append([message])
    return head, rounds


def trim_history(
    messages: list[dict[str, Any]], keep_rounds: int, tool_tokens: int = 0
) -> Trim | None:
    """Drop all but the last `keep_rounds` rounds; None when there is nothing to drop."""
    head, rounds = split_rounds(messages)
    keep_rounds = max(keep_rounds, 1)
    if len(rounds) <= keep_rounds:
        return None
    dropped, kept = rounds[:-keep_rounds], rounds[-keep_rounds:]
    notes: list[str] = []
    for unit in dropped:
        for message in unit:
            text = message.get("content")
            if not isinstance(text, str) or not text.strip():
                continue
            if _is_summary(message):
                notes.append(text[len(SUMMARY_PREFIX) :].strip())
            elif message.get("role") in ("assistant", "user"):
                notes.append(text.strip())
    summary: str | None = None
    rebuilt = list(head)
    if notes:
        summary = "\n".join(notes)
        if len(summary) > SUMMARY_CHARS:
            summary = "…" + summary[-SUMMARY_CHARS:]
        rebuilt.append({"role": "assistant", "content": f"{SUMMARY_PREFIX}\n{summary}"})
    for unit in kept:
        rebuilt.extend(unit)
    return Trim(
        messages=rebuilt,
        tokens_before=estimate_messages(messages) + tool_tokens,
        tokens_after=estimate_messages(rebuilt) + tool_tokens,
        rounds_kept=len(kept),
        rounds_dropped=len(dropped),
        summary=summary,
    )


def _is_summary(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return (
        message.get("role") == "assistant"
        and isinstance(content, str)
        and content.startswith(SUMMARY_PREFIX)
    )
