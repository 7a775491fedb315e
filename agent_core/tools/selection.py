"""Choosing which tools to offer when more are registered than one request may carry.

Plain lexical scoring against the task and the latest user message: a word of the query
found in a tool's name counts three times, in its description once. Ties keep registration
order, and the chosen tools are offered in registration order, so the same inputs always
give the same request (replay depends on it).
"""

from __future__ import annotations

import re

from agent_core.tools.base import ToolSpec

_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = (
    "a an and are as at be by do does for from how i in is it its me my of on or "
    "please the this to use what when which with you your"
)
_STOP = frozenset(_STOP_WORDS.split(" "))


def words(text: str) -> set[str]:
    found = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP or len(word) < 2:
            continue
        found.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return found


def relevance(spec: ToolSpec, query: set[str]) -> int:
    name_words = words(spec.name.replace("_", " ").replace("-", " "))
    description_words = words(spec.description)
    return 3 * len(query & name_words) + len(query & description_words)


def select_tools(specs: list[ToolSpec], query: str, max_tools: int) -> list[ToolSpec]:
    if len(specs) <= max_tools:
        return list(specs)
    query_words = words(query)
    ranked = sorted(
        range(len(specs)), key=lambda index: (-relevance(specs[index], query_words), index)
    )
    chosen = sorted(ranked[: max(max_tools, 0)])
    return [specs[index] for index in chosen]
