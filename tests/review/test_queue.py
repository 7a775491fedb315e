"""The review queue without the TUI (`workbench.engine.review.queue`): what comes next,
labels, notes, skips, undo as tombstones, progress, and resuming where it stopped; and the
labels file (`workbench.engine.review.labels`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support.failing_runs import failing_run
from traces.annotations import author_file
from traces.home import traces_dir
from traces.store import RunQuery, TraceStore
from workbench.engine.review.labels import (
    DEFAULT_LABELS,
    SCREEN_KEYS,
    LabelsError,
    labels_file,
    load_labels,
)
from workbench.engine.review.queue import QueueSpec, ReviewQueue, open_queue, positions_file

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
UNREVIEWED_FAILED = RunQuery(failed_only=True, unreviewed=True)


def make_runs(home: Path, failed: int, completed: int = 0) -> list[str]:
    """`failed` failing runs and `completed` good ones, a minute apart, oldest first."""
    ids = []
    for n in range(failed + completed):
        run_id = f"run{n:03d}"
        status = "max_turns" if n < failed else "completed"
        failing_run(traces_dir(home), run_id, at=START + timedelta(minutes=n), status=status)
        ids.append(run_id)
    return ids


def opened(home: Path, query: RunQuery, name: str = "queue") -> ReviewQueue:
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        return open_queue(store, home, QueueSpec(query, name), "alice")


def records(home: Path, author: str = "alice") -> list[dict[str, object]]:
    path = author_file(home, author)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_labels_walk_the_failed_runs_oldest_first_and_count_progress(tmp_path: Path) -> None:
    ids = make_runs(tmp_path, failed=4, completed=2)
    queue = opened(tmp_path, UNREVIEWED_FAILED)
    assert [row.run_id for row in queue.rows] == ids[:4]
    assert queue.progress.text() == "0 of 4 reviewed · run 1 of 4"
    assert queue.label("loop") is not None
    note = queue.note("asks twice")
    assert note is not None and note.run_id == ids[1]
    queue.label("good")
    assert queue.current is not None and queue.current.run_id == ids[2]
    assert queue.progress.text() == "2 of 4 reviewed · run 3 of 4"
    written = records(tmp_path)
    assert [(r["run_id"], r.get("labels"), r.get("text")) for r in written] == [
        (ids[0], ["loop"], None),
        (ids[1], [], "asks twice"),
        (ids[1], ["good"], None),
    ]
    assert {r["author"] for r in written} == {"alice"}


def test_skip_and_undo_append_tombstones_and_go_back(tmp_path: Path) -> None:
    ids = make_runs(tmp_path, failed=3)
    queue = opened(tmp_path, UNREVIEWED_FAILED)
    labelled = queue.label("bad")
    assert queue.skip()
    assert queue.current is not None and queue.current.run_id == ids[2]
    step = queue.undo()  # the skip: back to the run skipped, nothing written
    assert step is not None and step.kind == "skip"
    assert queue.current is not None and queue.current.run_id == ids[1]
    assert len(records(tmp_path)) == 1
    step = queue.undo()  # the label: a tombstone, and back to the first run
    assert step is not None and step.kind == "label"
    assert queue.current is not None and queue.current.run_id == ids[0]
    written = records(tmp_path)
    assert written[-1]["type"] == "remove" and labelled is not None
    assert written[-1]["removes"] == labelled.id and len(written) == 2
    assert queue.progress.reviewed == 0
    assert queue.undo() is None
    with TraceStore.for_home(tmp_path) as store:
        store.ingest_home(tmp_path)
        assert store.annotations() == []


def test_an_unreviewed_queue_drops_what_was_reviewed_when_reopened(tmp_path: Path) -> None:
    ids = make_runs(tmp_path, failed=5)
    queue = opened(tmp_path, UNREVIEWED_FAILED)
    queue.label("good")
    queue.skip()
    queue.label("bad")
    again = opened(tmp_path, UNREVIEWED_FAILED)
    assert [row.run_id for row in again.rows] == [ids[1], ids[3], ids[4]]
    assert again.progress.text() == "2 of 5 reviewed · run 1 of 3"
    assert not positions_file(tmp_path).exists()  # its position is what was reviewed


def test_other_queues_resume_where_they_stopped_by_name(tmp_path: Path) -> None:
    ids = make_runs(tmp_path, failed=4, completed=2)
    everything = RunQuery()
    queue = opened(tmp_path, everything, "all runs")
    queue.label("good")
    queue.skip()
    queue.skip()
    assert opened(tmp_path, everything, "all runs").cursor == 3
    assert opened(tmp_path, everything, "another name").cursor == 0
    resumed = opened(tmp_path, everything, "all runs")
    assert resumed.current is not None and resumed.current.run_id == ids[3]
    assert resumed.progress.text() == "1 of 6 reviewed · run 4 of 6"
    resumed.previous()
    assert opened(tmp_path, everything, "all runs").cursor == 2
    positions_file(tmp_path).write_text("{not json")  # damaged: start again, no failure
    assert opened(tmp_path, everything, "all runs").cursor == 0


def test_labels_file_replaces_the_defaults_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    assert load_labels(tmp_path).keys == DEFAULT_LABELS
    assert not set(DEFAULT_LABELS) & set(SCREEN_KEYS)
    labels_file(tmp_path).write_text('[keys]\nG = "great"\n7 = "needs a look"\n')
    assert load_labels(tmp_path).keys == {"G": "great", "7": "needs a look"}
    bad = {
        '[keys]\nn = "nice"\n': "key 'n' is the review screen's note key; choose another",
        '[keys]\ngg = "good"\n': "key 'gg' must be one letter or digit",
        "[keys]\ng = 3\n": "the label of key 'g' must be text of one line",
        '[keys\ng = "good"\n': "not valid TOML",
        '[labels]\ng = "good"\n': "unknown entry 'labels'",
        "# nothing\n": "give a [keys] table",
    }
    for text, said in bad.items():
        labels_file(tmp_path).write_text(text)
        with pytest.raises(LabelsError) as caught:
            load_labels(tmp_path)
        assert said in str(caught.value) and "\n" not in str(caught.value)
        assert str(caught.value).startswith(str(labels_file(tmp_path)))
