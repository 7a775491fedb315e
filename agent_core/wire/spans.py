"""A conversation's own wire form beside its chat-shape messages, so that a request re-sends
what a client or a model wrote exactly as it was written.

The chat shape keeps what every reader needs, not everything a wire format carries: an
Anthropic assistant turn's `thinking` blocks with their signatures, `redacted_thinking`, the
provider's own tool blocks; a Responses turn's `reasoning` items with their encrypted
content. An API that gave them wants them back as they were (Anthropic refuses a thinking
turn without its thinking block). A `WireSpan` is a stretch of a conversation in its wire
format (one Anthropic message, a Responses model turn's items) with the chat messages it
reads as; a codec writing a request sends the span's items in place of messages that are
still those, and writes the rest (new or edited messages) itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from agent_core.messages import calls_without_text


@dataclass(frozen=True)
class WireSpan:
    api: str  # the wire format of `items` (traces.events.ModelApi)
    messages: tuple[dict[str, Any], ...]  # what the items read as, in chat shape
    items: tuple[dict[str, Any], ...]  # Anthropic messages, or Responses input items


def placed(
    messages: Sequence[dict[str, Any]], spans: Iterable[WireSpan], api: str
) -> Iterator[tuple[tuple[dict[str, Any], ...] | None, list[dict[str, Any]]]]:
    """`messages` in runs, in order: (a span's items, the messages they stand for) where a
    span of format `api` reads as the messages that come next, (None, messages) for each
    run of messages no span stands for."""
    by_first: dict[str, list[WireSpan]] = {}
    for span in spans:
        if span.api == api and span.messages:
            by_first.setdefault(_key(span.messages[0]), []).append(span)
    fresh: list[dict[str, Any]] = []
    at = 0
    while at < len(messages):
        found = next(
            (
                span
                for span in by_first.get(_key(messages[at]), ())
                if len(span.messages) <= len(messages) - at
                and all(
                    _key(mine) == _key(theirs)
                    for mine, theirs in zip(span.messages, messages[at:], strict=False)
                )
            ),
            None,
        )
        if found is None:
            fresh.append(messages[at])
            at += 1
            continue
        if fresh:
            yield None, fresh
            fresh = []
        yield found.items, list(messages[at : at + len(found.messages)])
        at += len(found.messages)
    if fresh:
        yield None, fresh


def _key(message: dict[str, Any]) -> str:
    """What a message says, for finding its span: its reasoning is the span's to carry
    (the agent keeps none of it), and a tool-call-only text is one whether null or ""."""
    without_text = calls_without_text(message)
    said = {
        k: v
        for k, v in message.items()
        if k != "reasoning_content" and not (k == "content" and without_text)
    }
    return json.dumps(said, sort_keys=True, ensure_ascii=False)
