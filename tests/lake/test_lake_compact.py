"""`workbench lake compact`: retention, superseded run rows and doubled events dropped,
alone under its PostgreSQL advisory lock; a transaction conflict retried, and said when it
gives up."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lake.test_lake_bad_input import one_line_failure
from tests.lake.test_lake_reads import ok
from tests.support.demo import demo_run
from traces.store.lake import push as lake_push
from traces.store.lake.compact import LOCK_KEY
from traces.store.lake.config import LakeError, from_url
from traces.store.lake.connect import connect

pytestmark = pytest.mark.lake

COUNT = "SELECT count(*), count(DISTINCT (run_id, seq)) FROM events"


def test_compaction_drops_doubled_events_and_superseded_rows(
    demo_home: Path, lake_url: str
) -> None:
    ok(demo_home, "push", "--all", "--lake", lake_url)
    run = demo_run(demo_home, "completed")
    # What two pushes of one run at once leave: its events twice; and an older row of it.
    with connect(from_url(lake_url), read_only=False) as conn:
        conn.execute(
            "INSERT INTO lake.event_rows SELECT * FROM lake.event_rows WHERE run_id = ?", [run]
        )
        conn.execute(
            "INSERT INTO lake.run_rows SELECT * REPLACE (events - 1 AS events) "
            "FROM lake.run_rows WHERE run_id = ?",
            [run],
        )
        doubled = conn.execute("SELECT count(*) FROM lake.event_rows WHERE run_id = ?", [run])
        events = int((doubled.fetchone() or (0,))[0]) // 2
    assert ok(demo_home, "sql", COUNT, "--lake", lake_url) != ok(demo_home, "sql", COUNT)
    said = ok(demo_home, "lake", "compact", "--lake", lake_url)
    assert f"1 superseded run row and {events} doubled events dropped" in said
    assert ok(demo_home, "sql", COUNT, "--lake", lake_url) == ok(demo_home, "sql", COUNT)
    assert ok(demo_home, "runs", "--lake", lake_url) == ok(demo_home, "runs")


def test_retention_removes_old_runs_from_the_lake_only(demo_home: Path, lake_url: str) -> None:
    ok(demo_home, "push", "--all", "--lake", lake_url)
    kept = ok(demo_home, "lake", "compact", "--older-than", "2000-01-01", "--lake", lake_url)
    assert "0 runs past retention removed" in kept
    gone = ok(demo_home, "lake", "compact", "--older-than", "0d", "--lake", lake_url)
    assert "15 runs past retention removed" in gone
    assert ok(demo_home, "sql", "SELECT count(*) FROM runs", "--lake", lake_url).split()[1] == "0"
    assert ok(demo_home, "sql", "SELECT count(*) FROM runs").split()[1] == "15"


def test_a_second_compaction_waits_for_none(demo_home: Path, postgres, lake_url: str) -> None:
    import psycopg

    ok(demo_home, "push", "--all", "--lake", lake_url)
    catalog = lake_url.split("?")[0]
    with psycopg.connect(catalog, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        line = one_line_failure(demo_home, "lake", "compact", "--lake", lake_url)
    assert "another `workbench lake compact` is running on postgresql://" in line
    assert "compacted" in ok(demo_home, "lake", "compact", "--lake", lake_url)


def test_conflicts_are_retried_then_said(lake_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lake_push, "RETRY_FIRST_S", 0.01)
    config = from_url(lake_url)
    with connect(config, read_only=False) as mine, connect(config, read_only=False) as other:
        mine.execute("CREATE TABLE lake.t AS SELECT range AS a FROM range(100)")
        attempts: list[int] = []

        def deleting_against_another_writer() -> None:
            # Another writer deletes from the table and commits before this one does.
            attempts.append(len(attempts))
            mine.execute(f"DELETE FROM lake.t WHERE a = {len(attempts)}")
            other.execute(f"DELETE FROM lake.t WHERE a = {50 + len(attempts)}")

        with pytest.raises(LakeError) as said:
            lake_push.retrying(mine, config, deleting_against_another_writer)
        assert len(attempts) == lake_push.RETRIES
        assert f"gave up writing to the lake {config.label} after 6 transaction conflicts" in str(
            said.value
        )
        tries = iter([True, False])

        def conflicting_once() -> None:
            mine.execute("DELETE FROM lake.t WHERE a = 99")
            if next(tries):
                other.execute("DELETE FROM lake.t WHERE a = 98")

        lake_push.retrying(mine, config, conflicting_once)  # the second try commits
        assert mine.execute("SELECT count(*) FROM lake.t").fetchone() == (100 - 6 - 2,)
