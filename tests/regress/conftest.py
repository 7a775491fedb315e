"""A deterministic "model" for regression tests, served by the real local ModelServer.

It reads the tool descriptions in each request and picks the tool whose description best
matches the task's words, the way a careless model would: so editing a description into
something misleading really changes what it chooses. Sentences that say when *not* to use
a tool do not count towards it. After a tool result it picks the best tool not called yet,
and answers in text when nothing matches.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_core.model.script import ScriptStep, step_chunks
from workbench.engine.http.model_server import ModelServer, Reply

STOP = {
    "a",
    "an",
    "the",
    "and",
    "or",
    "of",
    "to",
    "in",
    "on",
    "at",
    "for",
    "it",
    "its",
    "is",
    "be",
    "by",
    "with",
    "what",
    "which",
    "when",
    "you",
    "your",
    "me",
    "my",
    "this",
    "that",
    "does",
    "do",
    "not",
    "say",
    "says",
    "tell",
    "than",
    "then",
    "there",
    "their",
    "from",
    "into",
    "out",
    "about",
    "use",
    "used",
}
NEGATION = re.compile(r"\b(not|never|don't|instead)\b", re.I)


def words(text: str) -> set[str]:
    found = set()
    for word in re.findall(r"[a-z]+", text.lower()):
        if word in STOP or len(word) < 3:
            continue
        found.add(word[:-1] if word.endswith("s") and len(word) > 4 else word)
    return found


def score(task: set[str], description: str) -> int:
    positive = [s for s in re.split(r"(?<=[.;!?])\s+", description) if not NEGATION.search(s)]
    # Other tools' names (`list_dir`) say nothing about what this tool does.
    return len(task & words(re.sub(r"\w+_\w+", " ", " ".join(positive))))


def arguments_for(schema: dict[str, Any], task: str) -> dict[str, Any]:
    properties = (schema.get("parameters") or {}).get("properties") or {}
    required = (schema.get("parameters") or {}).get("required") or []
    filename = re.search(r"[\w/-]+\.\w+", task)
    args: dict[str, Any] = {}
    for name in required or list(properties)[:1]:
        if name == "path":
            args[name] = filename.group(0) if filename else "."
        elif name == "expression":
            args[name] = " ".join(re.findall(r"[\d.]+|[-+*/()]", task)) or "0"
        else:
            args[name] = task
    return args


def choose(body: dict[str, Any]) -> ScriptStep:
    messages = body.get("messages") or []
    users = [m for m in messages if m.get("role") == "user"]
    task = str(users[-1].get("content") or "") if users else ""
    called = {
        call["function"]["name"]
        for m in messages
        if m.get("role") == "assistant"
        for call in m.get("tool_calls") or ()
    }
    task_words = words(task)
    best: tuple[int, dict[str, Any]] | None = None
    for tool in body.get("tools") or []:
        function = tool["function"]
        if function["name"] in called:
            continue
        points = score(task_words, function.get("description") or "")
        if points > 0 and (best is None or points > best[0]):
            best = (points, function)
    if best is None:
        return ScriptStep(content="I have no tool for that.")
    function = best[1]
    call = {"name": function["name"], "arguments": arguments_for(function, task)}
    return ScriptStep.model_validate({"tool_calls": [call]})


class ChoosingResponder:
    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self._numbers = itertools.count(1)

    def __call__(self, body: dict[str, Any]) -> Reply:
        number = next(self._numbers)
        chunks: list[dict[str, Any] | str] = list(
            step_chunks(choose(body), model="chooser", response_id=f"c{number}", call_number=number)
        )
        return Reply(chunks=chunks, done=True, delay_s=self.delay_s)


@pytest.fixture
def chooser_server() -> Iterator[ModelServer]:
    with ModelServer(ChoosingResponder(), model="chooser") as server:
        yield server


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small folder for the builtin tools to look at."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("buy milk\n", encoding="utf-8")
    (root / "docs").mkdir()
    return root
