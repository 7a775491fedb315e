"""Real processes: a writer killed with SIGKILL mid-run, a database held by another
process, a database file that is not a database."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from traces.store import StoreCorruptError, StoreLockedError, TraceStore

WRITER = r"""
import sys
from pathlib import Path
from traces.events import ModelChunk, RunStart
from traces.recorder import Recorder
from traces.writer import JsonlWriter

writer = JsonlWriter(Path(sys.argv[1]), "killed-run")
rec = Recorder("killed-run", [writer])
rec.emit(RunStart, turn=None, task="runs until killed", model="m")
rec.turn = 1
index = 0
while True:
    rec.emit(ModelChunk, index=index, elapsed_ms=1.0, data={"text": "x" * 5000})
    index += 1
    print(index, flush=True)  # the test waits on this, not on a clock
"""

HOLDER = r"""
import sys
from traces.store import TraceStore
store = TraceStore.open(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
store.close()
"""


def test_sigkilled_writer_leaves_a_trace_whose_whole_lines_ingest(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(folder)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if int(line) >= 50:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    data = (folder / "killed-run.jsonl").read_bytes()
    whole_lines = data.count(b"\n")
    assert whole_lines >= 51
    with TraceStore.open(tmp_path / "w.duckdb") as store:
        report = store.ingest([folder])
        assert report.new_events == whole_lines
        assert all("cut off" in problem for problem in report.problems)
        run = store.run("killed-run")
        assert run.status == "incomplete"
        assert store.count_events("killed-run") == whole_lines


@contextmanager
def held(db: Path) -> Iterator[Callable[[], None]]:
    """`db` open in another process until the block ends or it calls the `let_go` it is
    given (the holder lets go once it reads a line)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    stdin = holder.stdin

    def let_go() -> None:
        if not stdin.closed:
            stdin.write("\n")
            stdin.close()

    try:
        assert holder.stdout.readline().strip() == "ready"
        yield let_go
    finally:
        let_go()
        holder.wait()


def test_database_held_by_another_process_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    with held(db):
        with pytest.raises(StoreLockedError, match=str(db)) as caught:
            TraceStore.open(db)
        assert "\n" not in str(caught.value)
    TraceStore.open(db).close()  # free again once the other process is gone


def test_opening_waits_for_another_process_to_let_go(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    opened: list[int] = []

    def open_when_free() -> None:
        with TraceStore.open(db, wait_s=30.0) as store:
            opened.append(store.count_runs())

    with held(db) as let_go:
        with pytest.raises(StoreLockedError):
            TraceStore.open(db, wait_s=0.0)
        waiter = threading.Thread(target=open_when_free)
        waiter.start()
        let_go()
        waiter.join()
    assert opened == [0]


def test_corrupt_database_file_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    db.write_bytes(b"this is not a database\n" * 500)
    with pytest.raises(StoreCorruptError, match="not a readable workbench database") as caught:
        TraceStore.open(db)
    assert str(db) in str(caught.value) and "\n" not in str(caught.value)
