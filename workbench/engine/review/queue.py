"""A review queue: runs walked one at a time, each labelled with one key, noted, skipped,
or the last of these undone, with its progress, resumed where it stopped.

    queue = open_queue(store, home, QueueSpec(query, "failed, unreviewed"), "alice")
    queue.current           # the run to review; None at the end
    queue.label("loop")     # a note labelled `loop` on it, and on to the next run
    queue.undo()            # a tombstone for that note, and back to its run
    queue.progress.text()   # "12 of 80 reviewed · run 13 of 68"

The queue is the runs `spec.query` lists when it opens, oldest first, so runs recorded
later come after the rest and a remembered position stays good. A queue of unreviewed runs
(`query.unreviewed`) drops what was reviewed: opened again, it starts at its first run
nobody has annotated yet. Every other queue remembers where it stopped, by its name, in
`<home>/review/positions.json`. Notes are appended as `workbench note` appends them
(`traces.annotations`); undo never edits a line, it appends a tombstone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from traces.annotations import Note, Removal, append_annotation, new_id
from traces.events import ts_text, utc_now
from traces.user_files import written_whole

if TYPE_CHECKING:
    from traces.store import RunQuery, RunRow, TraceStore

# The most runs one queue holds (the oldest first): a review is a person's afternoon.
MAX_QUEUE = 10_000
POSITIONS_VERSION = 1


def positions_file(home: Path) -> Path:
    return home / "review" / "positions.json"


@dataclass(frozen=True)
class QueueSpec:
    """Which runs a queue walks (`query`), and its name: what it is in words, and the key
    its position is remembered by."""

    query: RunQuery
    name: str

    @property
    def drops_reviewed(self) -> bool:
        return bool(self.query.unreviewed)


@dataclass(frozen=True)
class Progress:
    reviewed: int  # runs of the queue's filter with an annotation (by anyone)
    total: int  # runs of the queue's filter, reviewed or not
    position: int  # the run shown, from 0; == length at the end
    length: int  # runs in this walk

    def text(self) -> str:
        where = (
            f"run {self.position + 1} of {self.length}"
            if self.position < self.length
            else "end of the queue"
        )
        return f"{self.reviewed} of {self.total} reviewed · {where}"


@dataclass(frozen=True)
class Step:
    """What a key did, for undo: a note written on the run at `index`, or a skip of it."""

    kind: Literal["label", "note", "skip"]
    index: int
    note: Note | None = None


@dataclass
class ReviewQueue:
    home: Path
    spec: QueueSpec
    author: str
    rows: list[RunRow]
    cursor: int
    reviewed_before: int  # runs of the filter annotated before the queue opened
    total: int
    unreviewed_at_open: set[str]  # the rows nobody had annotated when it opened
    notes: dict[str, list[Note]] = field(default_factory=dict)  # run -> notes written here
    steps: list[Step] = field(default_factory=list)

    @property
    def current(self) -> RunRow | None:
        return self.rows[self.cursor] if self.cursor < len(self.rows) else None

    @property
    def progress(self) -> Progress:
        gained = sum(
            1 for run_id, ids in self.notes.items() if ids and run_id in self.unreviewed_at_open
        )
        return Progress(self.reviewed_before + gained, self.total, self.cursor, len(self.rows))

    def label(self, label: str) -> Note | None:
        """Label the current run and go on to the next; None at the end of the queue."""
        note = self._write(labels=[label])
        if note is not None:
            self.steps.append(Step("label", self.cursor, note))
            self._move(self.cursor + 1)
        return note

    def note(self, text: str) -> Note | None:
        """A note with `text` on the current run, which stays shown (a label may follow)."""
        note = self._write(text=text) if text.strip() else None
        if note is not None:
            self.steps.append(Step("note", self.cursor, note))
        return note

    def skip(self) -> bool:
        if self.current is None:
            return False
        self.steps.append(Step("skip", self.cursor))
        self._move(self.cursor + 1)
        return True

    def previous(self) -> bool:
        if self.cursor == 0:
            return False
        self._move(self.cursor - 1)
        return True

    def undo(self) -> Step | None:
        """Undo the last label, note or skip of this walk: a note gets a tombstone (the
        file keeps both lines); the run it was on is shown again."""
        if not self.steps:
            return None
        step = self.steps.pop()
        if step.note is not None:
            note = step.note
            removal = Removal(id=new_id(), author=self.author, run_id=note.run_id, removes=note.id)
            append_annotation(self.home, removal)
            self.notes[note.run_id].remove(note)
        self._move(step.index)
        return step

    def _write(self, labels: list[str] | None = None, text: str | None = None) -> Note | None:
        row = self.current
        if row is None:
            return None
        note = Note(
            id=new_id(), author=self.author, run_id=row.run_id, labels=labels or [], text=text
        )
        append_annotation(self.home, note)
        self.notes.setdefault(row.run_id, []).append(note)
        return note

    def written(self, run_id: str) -> list[Note]:
        """The notes this walk wrote on a run and did not undo."""
        return list(self.notes.get(run_id, ()))

    def _move(self, cursor: int) -> None:
        self.cursor = max(0, min(cursor, len(self.rows)))
        if not self.spec.drops_reviewed:
            after = self.rows[self.cursor - 1].run_id if self.cursor else None
            save_position(self.home, self.spec.name, after)


def open_queue(store: TraceStore, home: Path, spec: QueueSpec, author: str) -> ReviewQueue:
    """The queue of the runs `spec.query` lists now, at its first unreviewed run (a queue
    of unreviewed runs) or where it stopped last time (any other)."""
    query = spec.query
    rows = store.runs(limit=MAX_QUEUE, sort="started_at", descending=False, where=query)
    every = replace(query, unreviewed=None)
    unreviewed = replace(query, unreviewed=True)
    total = int(store.count_runs(where=every))
    reviewed_before = total - int(store.count_runs(where=unreviewed))
    ids = [row.run_id for row in rows]
    fresh = store.runs(limit=MAX_QUEUE, where=replace(unreviewed, run_ids=tuple(ids)))
    cursor = 0
    if not spec.drops_reviewed:
        after = load_positions(home).get(spec.name)
        if after in ids:
            cursor = ids.index(after) + 1
    return ReviewQueue(
        home=home,
        spec=spec,
        author=author,
        rows=rows,
        cursor=cursor,
        reviewed_before=reviewed_before,
        total=total,
        unreviewed_at_open={row.run_id for row in fresh},
    )


def load_positions(home: Path) -> dict[str, str | None]:
    """Each queue's last run passed, by queue name."""
    return {name: entry.get("after") for name, entry in _queues(home).items()}


def save_position(home: Path, name: str, after: str | None) -> None:
    """Remember that queue `name` has passed run `after` (None: none yet), replacing the
    file whole so a reader never sees half of it."""
    queues = _queues(home) | {name: {"after": after, "ts": ts_text(utc_now())}}
    path = positions_file(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    with written_whole(path) as out:
        json.dump({"version": POSITIONS_VERSION, "queues": queues}, out, indent=1)


def _queues(home: Path) -> dict[str, dict[str, Any]]:
    """The positions file's queues; a file that cannot be read has none (where a queue
    stopped is a convenience, not a record)."""
    try:
        data = json.loads(positions_file(home).read_text(encoding="utf-8"))
        return {str(name): dict(entry) for name, entry in data["queues"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}
