"""`workbench note`: who is annotating, what they point at, and the record appended.

A target is `RUN[:TURN[:CALL_ID]]`: a run (an id prefix), one of its turns, or one tool
call of that turn, each checked against the store before anything is written. Removing an
annotation appends a tombstone naming it; nothing is edited.
"""

from __future__ import annotations

import getpass
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traces.annotations import Note, Removal, annotation_target, append_annotation, new_id

if TYPE_CHECKING:
    from traces.store import TraceStore

AUTHOR_ENV = "WORKBENCH_AUTHOR"


class NoteError(ValueError):
    """A note that cannot be written, as one line saying what to do."""


def author_name(given: str | None, cwd: Path | None = None) -> str:
    """Who is annotating: `--author`, else `$WORKBENCH_AUTHOR`, else git's `user.name`,
    else the login name."""
    for name in (given, os.environ.get(AUTHOR_ENV)):
        if name and name.strip():
            return name.strip()
    try:
        found = subprocess.run(
            ["git", "config", "user.name"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
            cwd=cwd,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        found = ""
    if found:
        return found
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "anonymous"


@dataclass(frozen=True)
class Target:
    """What a note is on: a run, a turn of it, or a tool call of that turn."""

    run: str  # the run id as given (a prefix), or the full one once checked
    turn: int | None = None
    call_id: str | None = None

    @classmethod
    def parse(cls, text: str) -> Target:
        run, _, rest = text.strip().partition(":")
        turn_text, _, call_id = rest.partition(":")
        if not run:
            raise NoteError(f"{text!r}: give RUN, RUN:TURN or RUN:TURN:CALL_ID")
        turn: int | None = None
        if turn_text:
            if not turn_text.isdigit() or int(turn_text) < 1:
                raise NoteError(f"{text!r}: the turn must be a number from 1 (RUN:TURN)")
            turn = int(turn_text)
        elif rest:
            raise NoteError(f"{text!r}: give RUN, RUN:TURN or RUN:TURN:CALL_ID")
        return cls(run, turn, call_id or None)

    def checked(self, store: TraceStore) -> Target:
        """The target with the full run id, once the store has its run, turn and call."""
        run_id = store.resolve_run(self.run)  # raises, one line, for none or several
        if self.turn is not None and self.turn not in store.turn_numbers(run_id):
            raise NoteError(
                f"run {run_id[:12]} has no turn {self.turn}; `workbench show {run_id[:12]}` "
                "lists its turns"
            )
        if self.call_id is not None:
            calls = [
                event
                for event in store.tool_call_events(run_id, [self.call_id])
                if event.turn == self.turn
            ]
            if not calls:
                raise NoteError(
                    f"turn {self.turn} of run {run_id[:12]} has no tool call {self.call_id!r}; "
                    f"`workbench show {run_id[:12]}` lists its calls"
                )
        return Target(run_id, self.turn, self.call_id)

    def describe(self) -> str:
        if self.turn is None:
            return f"run {self.run[:12]}"
        return f"{annotation_target(self.turn, self.call_id)} of run {self.run[:12]}"


def add_note(
    home: Path,
    store: TraceStore,
    target: Target,
    author: str,
    labels: list[str],
    scores: dict[str, float],
    text: str | None,
) -> tuple[Note, Path]:
    """Append a note on `target` (checked against `store`) to the author's file."""
    if not labels and not scores and not text:
        raise NoteError("a note needs at least one --label, --score or --text")
    where = target.checked(store)
    note = Note(
        id=new_id(),
        author=author,
        run_id=where.run,
        turn=where.turn,
        call_id=where.call_id,
        labels=list(dict.fromkeys(labels)),
        scores=scores,
        text=text or None,
    )
    return note, append_annotation(home, note)


def remove_note(
    home: Path, store: TraceStore, target: Target, author: str, annotation_id: str
) -> tuple[Removal, Path]:
    """Append a tombstone for the annotation `annotation_id` on the target's run."""
    run_id = store.resolve_run(target.run)
    if not any(row["id"] == annotation_id for row in store.annotations(run_id)):
        raise NoteError(
            f"run {run_id[:12]} has no annotation {annotation_id!r} (or it was removed "
            f"already); `workbench note {run_id[:12]} --list` lists them"
        )
    removal = Removal(id=new_id(), author=author, run_id=run_id, removes=annotation_id)
    return removal, append_annotation(home, removal)


def parse_score(text: str) -> tuple[str, float]:
    """`--score NAME=VALUE`: a name and a number."""
    name, sep, value = text.partition("=")
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not sep or not name.strip() or number != number or number in (float("inf"), float("-inf")):
        raise NoteError(f"--score {text!r}: give NAME=VALUE with a number, e.g. helpful=0.5")
    return name.strip(), number


def annotation_line(row: dict[str, Any]) -> str:
    """One annotation as `show` and `note --list` print it: id, where, who, what."""
    where = annotation_target(row.get("turn"), row.get("call_id"))
    parts = [f"[{label}]" for label in row.get("labels") or []]
    parts += [f"{name}={value:g}" for name, value in (row.get("scores") or {}).items()]
    if row.get("text"):
        parts.append(repr(row["text"]) if "\n" in row["text"] else f'"{row["text"]}"')
    return f"{row['id']}  {where:<14}  {row['author']}: {' '.join(parts)}"
