"""What every command picks up from the home's traces (the quick look: new files, and runs
that have not ended), what only `workbench ingest` re-checks, and how a long ingest reports
its progress."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.support.generated_runs import small_run
from traces.home import traces_dir
from traces.store import TraceStore
from workbench.cli.progress import StderrProgress, show_off_terminal


def test_the_quick_look_finds_new_runs_and_runs_still_writing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = traces_dir(home)
    small_run(folder, "run-done")
    growing = small_run(folder, "run-live", end=False)
    (folder / "nested").mkdir()
    with TraceStore.for_home(home) as store:
        first = store.ingest_home(home)
        assert (first.files, first.new_runs) == (2, 2)
        assert store.ingest_home(home).files == 0  # nothing new: nothing read

        small_run(folder / "nested", "run-new")
        lines = growing.read_text().splitlines()
        end = {k: json.loads(lines[-1])[k] for k in ("run_id", "ts")}
        end |= {"seq": len(lines), "type": "run_end", "turn": None, "status": "completed"}
        with growing.open("a") as handle:
            handle.write(json.dumps(end) + "\n")
        second = store.ingest_home(home)
        # The new run's 8 events and the growing run's run_end.
        assert (second.files, second.new_runs, second.new_events) == (2, 1, 9)
        assert second.problems == []
        assert store.run("run-live").status == "completed"
        assert store.run("run-new").status == "completed"


def test_a_run_that_ended_is_rechecked_only_by_a_full_ingest(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = small_run(traces_dir(home), "run-a")
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        # Lines written after run_end: no writer does this, so the quick look skips the
        # file; `workbench ingest` (every file's size) still sees and reports them.
        with path.open("a") as handle:
            handle.write('{"not": "an event"}\n')
        assert store.ingest_home(home).files == 0
        full = store.ingest([traces_dir(home)])
        assert full.files == 1 and full.problems == [f"{path}:9: missing field 'type'"]


def test_ingest_reports_its_progress_step_by_step_up_to_the_end(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for number in range(20):
        small_run(traces_dir(home), f"run-{number:02}")
    heard: list[tuple[str, float]] = []
    with TraceStore.for_home(home) as store:
        report = store.ingest_home(home, lambda what, done: heard.append((what, done)))
    assert report.new_runs == 20
    fractions = [done for _, done in heard]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    steps = list(dict.fromkeys(what for what, _ in heard))
    assert steps == [
        "reading 20 trace files",
        "summing up runs (20 files)",
        "writing the store (20 files)",
    ]


def test_progress_on_stderr_waits_a_second_then_prints_each_tenth() -> None:
    quiet = io.StringIO()
    StderrProgress(quiet)("reading 3 trace files", 0.5)  # under a second: nothing
    assert quiet.getvalue() == ""

    log = io.StringIO()  # not a terminal: nothing, unless asked (`--progress`)
    progress = StderrProgress(log, show_after_s=0)
    progress("reading 3 trace files", 0.5)
    assert log.getvalue() == ""
    show_off_terminal()
    try:
        progress = StderrProgress(log, show_after_s=0)  # asked: plain lines, one per tenth
        for done in (0.0, 0.02, 0.15, 0.18, 0.5, 1.0):
            progress("reading 3 trace files", done)
        progress.close()
    finally:
        show_off_terminal(False)
    assert log.getvalue().splitlines() == [
        "workbench: 0% reading 3 trace files",
        "workbench: 15% reading 3 trace files",
        "workbench: 50% reading 3 trace files",
        "workbench: 100% reading 3 trace files",
    ]


def test_a_quick_ingest_prints_no_progress(tmp_path: Path) -> None:
    home = tmp_path / "home"
    small_run(traces_dir(home), "run-a")
    command = [sys.executable, "-c", "from workbench.cli import main; main()", "runs"]
    done = subprocess.run(
        [*command, "--home", str(home)], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stderr == "" and "run-a" in done.stdout


def test_folders_unchanged_since_a_settled_look_are_not_listed_again(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = traces_dir(home)
    small_run(folder, "run-a")
    past = time.time_ns() - 60 * 10**9
    os.utime(folder, ns=(past, past))  # settled: changed a minute ago
    with TraceStore.for_home(home) as store:
        assert store.ingest_home(home).new_runs == 1
        # A file slipped in without the folder's time moving (as within one clock tick):
        # the quick look trusts the settled folder and skips the listing...
        small_run(folder, "run-b")
        os.utime(folder, ns=(past, past))
        assert store.ingest_home(home).files == 0
        # ...and any change to the folder brings the listing back.
        small_run(folder, "run-c")
        assert store.ingest_home(home).new_runs == 2


def test_a_folder_changed_just_now_is_listed_again(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = traces_dir(home)
    small_run(folder, "run-a")
    then = os.stat(folder).st_mtime_ns  # under two seconds ago: not trusted yet
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        small_run(folder, "run-b")
        os.utime(folder, ns=(then, then))  # as if within the same clock tick
        assert store.ingest_home(home).new_runs == 1
