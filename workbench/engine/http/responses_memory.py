"""What the capture proxy remembers of Responses API answers, so that a request that leans on
the server's memory is still recorded with the whole conversation it continues.

A Responses client may send only what is new after an answer it names
(`previous_response_id`), or name an earlier output item instead of repeating it
(`{"type": "item_reference", "id": "msg_…"}`, as the Vercel AI SDK does). The upstream
resolves both from what it stored; the proxy does the same from what it saw: each answer's
id with its run and the whole conversation up to and with it, and each output item by id.
The trace keeps the wire body exactly; its chat-shape messages are the whole context, so
show, fork, diff and suites see what the model saw, and a fork sends it whole.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from agent_core.wire.responses import continued as continued

# Answers and items remembered; older ones are forgotten first.
MAX_ANSWERS = 1000
MAX_ITEMS = 20_000

Run = TypeVar("Run")


@dataclass
class Answer(Generic[Run]):
    run: Run
    messages: list[Any]  # the conversation in chat shape, this answer last


class ResponsesMemory(Generic[Run]):
    def __init__(self) -> None:
        self._answers: OrderedDict[str, Answer[Run]] = OrderedDict()
        self._items: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def remember(self, answer_id: str, run: Run, messages: list[Any], output: list[Any]) -> None:
        """An answer with this id ended the conversation `messages` of `run`; its output
        items may be referred to later."""
        self._answers[answer_id] = Answer(run, messages)
        self._answers.move_to_end(answer_id)
        for item in output:
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                self._items[item["id"]] = item
                self._items.move_to_end(item["id"])
        while len(self._answers) > MAX_ANSWERS:
            self._answers.popitem(last=False)
        while len(self._items) > MAX_ITEMS:
            self._items.popitem(last=False)

    def answer(self, answer_id: Any) -> Answer[Run] | None:
        return self._answers.get(answer_id) if isinstance(answer_id, str) else None

    def resolved(self, body: dict[str, Any]) -> dict[str, Any]:
        """`body` with every `item_reference` the proxy can resolve replaced by the item it
        names (the body itself when there is none)."""
        items = body.get("input")
        if not isinstance(items, list) or not any(_reference(item) for item in items):
            return body
        known = self._items
        spelled = [known.get(item["id"], item) if _reference(item) else item for item in items]
        return {**body, "input": spelled}


def _reference(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and item.get("type") == "item_reference"
        and isinstance(item.get("id"), str)
    )
