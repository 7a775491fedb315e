"""Captured streams re-aimed at `read_file`, and a responder that serves them to a real run.

`as_read_file_calls` keeps every byte-level quirk of a capture (missing or repeated
indexes, `""`/null ids and names, where the fragments split, finish reasons, usage, extra
fields, raw SSE lines) and changes only what a call asks for: each non-empty tool name
becomes `read_file`, and each call's non-empty argument fragments are re-cut, in the same
number and places, from `{"path": "notes.txt"}` (the second call of a pair reads
`todo.txt`). Two gaps in partial captures are filled, in the smallest way: a call that never
carried argument text gets the whole string in its last (empty) fragment, and a call that
never carried a name gets `read_file` on its first fragment.

Calls are told apart the simple way a reader of the capture would: by the order in which
their `index` values first appear; an entry without an index belongs to the call before it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from tests.support.servers import text_chunks
from workbench.engine.http.model_server import Reply

NOTES = "Buy oat milk.\nCall the plumber on Friday.\n"
TODO = "Renew the passport.\n"
FILES = {"notes.txt": NOTES, "todo.txt": TODO}
# What each call of a rewritten capture asks for, in call order.
ARGUMENTS = ['{"path": "notes.txt"}', '{"path": "todo.txt"}']

Line = dict[str, Any] | str


def _tool_entries(lines: list[Line]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if not isinstance(line, dict):
            continue
        for choice in line.get("choices") or []:
            for entry in (choice.get("delta") or {}).get("tool_calls") or []:
                if isinstance(entry, dict):
                    yield entry


def _by_call(lines: list[Line]) -> list[list[dict[str, Any]]]:
    """The tool-call entries grouped per call, each group in wire order."""
    calls: list[list[dict[str, Any]]] = []
    slots: dict[Any, int] = {}
    current = 0
    for entry in _tool_entries(lines):
        index = entry.get("index")
        if index is not None:
            current = slots.setdefault(index, len(slots))
        while len(calls) <= current:
            calls.append([])
        calls[current].append(entry)
    return calls


def _cut(text: str, pieces: int) -> list[str]:
    """`text` in `pieces` non-empty consecutive parts of near-equal length."""
    size, extra = divmod(len(text), pieces)
    assert size > 0, "more fragments than characters to spread over them"
    parts, start = [], 0
    for number in range(pieces):
        end = start + size + (1 if number < extra else 0)
        parts.append(text[start:end])
        start = end
    return parts


def as_read_file_calls(lines: list[Line]) -> list[Line]:
    """A copy of a capture's lines whose tool calls read `notes.txt` (then `todo.txt`)."""
    lines = copy.deepcopy(lines)
    for number, entries in enumerate(_by_call(lines)):
        functions = [
            entry["function"] for entry in entries if isinstance(entry.get("function"), dict)
        ]
        assert functions, "a tool call without any function object"
        carrying = [f for f in functions if f.get("arguments")]
        if carrying:
            for function, piece in zip(
                carrying, _cut(ARGUMENTS[number], len(carrying)), strict=True
            ):
                function["arguments"] = piece
        else:
            with_key = [f for f in functions if "arguments" in f] or functions
            with_key[-1]["arguments"] = ARGUMENTS[number]
        named = [f for f in functions if f.get("name")]
        for function in named:
            function["name"] = "read_file"
        if not named:
            functions[0]["name"] = "read_file"
    return lines


def served_chunks(lines: list[Line]) -> list[dict[str, Any]]:
    """The data payloads a client sees as chunks: every JSON line but an error event."""
    return [line for line in lines if isinstance(line, dict) and "error" not in line]


Step = Reply | Callable[[dict[str, Any]], Reply]


class Answers:
    """Answers request N with step N (a `Reply`, or a function of the request body); a
    request past the last step gets a 410, which the client never retries."""

    def __init__(self, *steps: Step) -> None:
        self.steps = steps
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.calls += 1
        if self.calls > len(self.steps):
            return _refuse(f"unexpected request number {self.calls}")
        step = self.steps[self.calls - 1]
        return step if isinstance(step, Reply) else step(body)


def _refuse(message: str) -> Reply:
    return Reply(status=410, body={"error": {"message": message, "type": "test_responder"}})


def quote_tool_results(usage: dict[str, Any]) -> Step:
    """The final answer: quotes the tool messages that follow the last assistant message,
    after checking each answers one of that message's calls and holds a file's text."""

    def answer(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        assistant = [n for n, m in enumerate(messages) if m.get("role") == "assistant"]
        if not assistant:
            return _refuse("no assistant message in the request")
        last = assistant[-1]
        call_ids = [call["id"] for call in messages[last].get("tool_calls") or []]
        results = messages[last + 1 :]
        if [m.get("tool_call_id") for m in results] != call_ids:
            return _refuse(f"tool messages {results!r} do not answer the calls {call_ids}")
        contents = [str(m.get("content")) for m in results]
        firsts = [text.splitlines()[0] for text in FILES.values()]
        if not all(any(first in content for first in firsts) for content in contents):
            return _refuse(f"no file text in the tool messages {contents!r}")
        quoted = "From the files: " + " | ".join(contents)
        return Reply(chunks=text_chunks(quoted, usage=usage))

    return answer
