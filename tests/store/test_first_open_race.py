"""Two first ingests at once: DuckDB creates a new database file and only then locks it,
so a second process can open the file in between and read it as "not a valid DuckDB file".
That file is being made, not damaged: the second process waits for it as for a lock."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from traces.store import StoreCorruptError, StoreError, TraceStore

GOLDEN_V1 = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "v1"
CLI = "import sys; from workbench.cli import main; sys.exit(main())"


def test_a_database_file_still_being_created_is_waited_for(tmp_path: Path) -> None:
    db = tmp_path / "workbench.duckdb"
    db.touch()  # what the first process's create leaves for an instant: no header yet
    with pytest.raises(StoreError):
        TraceStore.open(db, wait_s=0.0)  # not waiting: it cannot be read yet
    opened: list[int] = []
    failed: list[str] = []

    def second_process() -> None:
        try:
            with TraceStore.open(db, wait_s=30.0) as store:
                opened.append(store.count_runs())
        except StoreError as exc:
            failed.append(str(exc))

    waiter = threading.Thread(target=second_process)
    waiter.start()
    made = tmp_path / "made.duckdb"  # the first process finishes making it
    with TraceStore.open(made) as store:
        store.ingest([GOLDEN_V1])
    os.replace(made, db)
    waiter.join(60)
    assert failed == [] and opened == [len(list(GOLDEN_V1.glob("*.jsonl")))]


def test_an_old_empty_database_file_is_reported_at_once(tmp_path: Path) -> None:
    db = tmp_path / "workbench.duckdb"
    db.touch()
    an_hour_ago = time.time() - 3600
    os.utime(db, (an_hour_ago, an_hour_ago))  # left by a crash, not being made
    started = time.monotonic()
    with pytest.raises(StoreCorruptError, match="move it aside"):
        TraceStore.open(db, wait_s=30.0)
    assert time.monotonic() - started < 15


def test_two_first_ingests_at_once_both_succeed(tmp_path: Path) -> None:
    for attempt in range(3):
        home = tmp_path / f"home{attempt}"
        shutil.copytree(GOLDEN_V1, home / "traces")
        command = [sys.executable, "-c", CLI, "--home", str(home), "runs", "--json"]
        procs = [
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0 and "not a valid" not in err, err
            assert out.count('"run_id"') == len(list(GOLDEN_V1.glob("*.jsonl")))
