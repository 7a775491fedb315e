"""The store's layout for point lookups: a run's events are read from the ingest batches
that hold them (`run_batches`), a long run pages by position, the first failure is one
query, and `search` picks its events by `search_text` first; each answers what a walk over
all of the run's events answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.generated_runs import long_run
from tests.support.golden import golden_traces_in
from traces.events import ToolEnd
from traces.store import TraceStore
from workbench.engine.views.outline import event_is_failure

LONG = "1" * 32


@pytest.fixture
def home(tmp_path: Path) -> Path:
    golden_traces_in(tmp_path / "traces")
    return tmp_path


def test_a_run_is_read_from_the_batches_that_hold_it(home: Path) -> None:
    path = long_run(home / "traces", 20, run_id=LONG)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:30]))  # the run is still being written
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        first = store.query("SELECT batches FROM run_batches WHERE run_id = ?", [LONG])[1]
        path.write_bytes(b"".join(lines))  # ... and it goes on
        store.ingest_home(home)
        _, rows = store.query("SELECT batches FROM run_batches WHERE run_id = ?", [LONG])
        _, held = store.query(
            "SELECT list(DISTINCT batch ORDER BY batch) FROM event_rows WHERE run_id = ?", [LONG]
        )
        events = store.events(LONG)
        assert store.count_events(LONG) == len(lines)
        # Every run has its row, and its batches are exactly those its rows are in.
        _, unindexed = store.query("SELECT count(*) FROM runs ANTI JOIN run_batches USING (run_id)")
    assert first == [([1],)]
    assert rows == held and len(rows[0][0]) == 2
    assert [event.seq for event in events] == list(range(len(lines)))
    assert events[-1].type == "run_end"
    assert unindexed == [(0,)]


def test_a_long_run_pages_by_position(home: Path) -> None:
    long_run(home / "traces", 750, run_id=LONG)  # 3,002 events
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        everything = store.events(LONG)
        assert len(everything) == 3002
        for offset in (0, 1, 1500, 2990, 3001, 3002, 5000):
            page = store.events(LONG, offset=offset, limit=50)
            assert [e.seq for e in page] == [e.seq for e in everything[offset : offset + 50]]
        assert [e.seq for e in store.events(LONG, offset=2999)] == [2999, 3000, 3001]
        window = store.events(LONG, turns=(700, 701))
        assert {e.turn for e in window} == {None, 700, 701} and len(window) == 10


def test_a_run_with_a_gap_in_its_seqs_still_pages_by_position(home: Path) -> None:
    path = long_run(home / "traces", 10, run_id=LONG)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:5] + lines[6:]))  # seq 5 is missing
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        everything = store.events(LONG)
        page = store.events(LONG, offset=5, limit=3)
    assert [e.seq for e in page] == [e.seq for e in everything[5:8]] == [6, 7, 8]


def test_the_first_failure_is_the_first_event_a_walk_finds(home: Path) -> None:
    long_run(home / "traces", 300, run_id=LONG, failing_turn=280)
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        run_ids = [run.run_id for run in store.runs(limit=1000)]
        assert len(run_ids) == 9
        failing = 0
        for run_id in run_ids:
            walked = next((e for e in store.events(run_id) if event_is_failure(e)), None)
            found = store.first_failure(run_id)
            assert (found.seq if found else None) == (walked.seq if walked else None), run_id
            failing += walked is not None
        long_failure = store.first_failure(LONG)
    assert failing == 8  # the seven failed golden runs and the long one
    assert isinstance(long_failure, ToolEnd) and long_failure.turn == 280


def test_search_finds_text_as_written_in_any_case(home: Path) -> None:
    long_run(home / "traces", 30, run_id=LONG)
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        hits = store.search("STEP 17 said")
        none = store.search("step 17 said nothing")
    assert [(run_id, turn, place) for run_id, turn, _, place, _ in hits] == [(LONG, 17, "message")]
    assert none == []


def test_show_pages_a_run_of_many_turns(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main

    long_run(home / "traces", 130, run_id=LONG)
    argv = ["--home", str(home)]
    assert main(["show", LONG[:8], *argv]) == 0
    first = capsys.readouterr().out
    assert "── turn 100 [" in first and "── turn 101 [" not in first
    assert "(turns 1-100 of 130 shown; the next ones: `workbench show 111111111111 --turns" in first
    assert "end: completed" in first
    assert main(["show", LONG[:8], "--turns", "101-200", "--json", *argv]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [turn["turn"] for turn in doc["chain"]["turns"]] == list(range(101, 131))
    assert doc["turns_shown"] == [101, 200] and doc["chain"]["end"]["status"] == "completed"
    with pytest.raises(SystemExit) as bad:
        main(["show", LONG[:8], "--turns", "5-2", *argv])
    assert bad.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'5-2' is not a turn range like 1-100" in err[0]


def test_search_finds_text_in_a_line_read_on_its_own(home: Path) -> None:
    from tests.support.big_traces import MIB
    from tests.support.generated_runs import run_with_big_result

    # A line over `ingest_batch.LONG_LINE` goes in one at a time, its search text with it.
    run_with_big_result(home / "traces", "big" * 10 + "ab", 5 * MIB)
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        hits = store.search("CDEF0123", run_id="big" * 10 + "ab", limit=5)
    assert [(place, turn) for _, turn, _, place, _ in hits] == [("tool_result", 1)]
