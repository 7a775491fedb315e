"""Which run a captured request continues: the proxy's index of conversations.

A request continues a run when its messages repeat what that run said: the same messages
as a failed request are the next attempt of its turn; the conversation so far (the last
request's messages and the answer) with more after it is the next turn of a run waiting
for its client, or a follow-up of one that completed (docs/capture.md has the rules).

Messages are compared by their digest by meaning (`message_digest`), not kept: a long
conversation costs a digest a message. The index is looked up by the digest of what a
request must repeat, one look for each conversation length it holds, so a request costs a
few looks however many runs are known.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Generic, Literal, Protocol, TypeVar

from workbench.engine.recording.replay.same_request import joined_digest, message_digest

# A request repeats a failed request (the same turn again), or extends a conversation.
Continues = Literal["retry", "extend"]


class Conversing(Protocol):
    """A run the index can hold: known by its id, and by the name a client gave it."""

    @property
    def run_id(self) -> str: ...

    @property
    def name(self) -> str | None: ...


Run = TypeVar("Run", bound=Conversing)


def meaning(messages: list[Any]) -> list[bytes]:
    """The messages by meaning, a digest each."""
    return [message_digest(message) for message in messages]


class ConversationIndex(Generic[Run]):
    """The runs a request may continue, by the digest of what it must repeat."""

    def __init__(self) -> None:
        # Each entry's runs by id, in the order they came: many clients may send the same
        # conversation, and taking one out must not compare it with all the others.
        self._runs: dict[tuple[Continues, bytes], dict[str, Run]] = {}
        # Where each run is, and the conversation length it counts in `_sizes`.
        self._places: dict[str, tuple[tuple[Continues, bytes], int]] = {}
        self._sizes: Counter[int] = Counter()  # the lengths of the conversations held

    def find(self, meaning: list[bytes], name: str | None) -> Run | None:
        """The run a request of these messages (by meaning) continues, of `name` when it
        names one: the run whose failed request it repeats, else the run whose conversation
        it extends — the longest conversation first, the newest run among equals."""
        for run in reversed(self._runs.get(("retry", joined_digest(meaning)), {}).values()):
            if name is None or run.name == name:
                return run
        for size in sorted((n for n in self._sizes if n < len(meaning)), reverse=True):
            extended = self._runs.get(("extend", joined_digest(meaning[:size])), {})
            for run in reversed(extended.values()):
                if name is None or run.name == name:
                    return run
        return None

    def retries(self, run: Run, request: list[bytes]) -> None:
        """`run`'s answer to `request` (by meaning) failed: the same again retries it."""
        self._put(run, ("retry", joined_digest(request)), 0)

    def extends(self, run: Run, conversation: list[bytes]) -> None:
        """`run` said `conversation` (by meaning, its answer last): more after it goes on."""
        self._put(run, ("extend", joined_digest(conversation)), len(conversation))
        self._sizes[len(conversation)] += 1

    def remove(self, run: Run) -> None:
        """Take `run` out (it is answering again, or forgotten)."""
        place = self._places.pop(run.run_id, None)
        if place is None:
            return
        entry, size = place
        runs = self._runs.get(entry, {})
        runs.pop(run.run_id, None)
        if not runs:
            self._runs.pop(entry, None)
        if entry[0] == "extend":
            self._sizes[size] -= 1
            if self._sizes[size] <= 0:
                del self._sizes[size]

    def clear(self) -> None:
        self._runs.clear()
        self._places.clear()
        self._sizes.clear()

    def _put(self, run: Run, entry: tuple[Continues, bytes], size: int) -> None:
        self.remove(run)
        self._runs.setdefault(entry, {})[run.run_id] = run
        self._places[run.run_id] = (entry, size)
