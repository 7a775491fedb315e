"""Ingest at the sizes users reach: a long run read again after it grew, lines of tens of
MB, homes of many runs, a file DuckDB cannot take, an ingest killed half-way. Nothing is
lost, one file never hides the others, and memory stays bounded (DuckDB's own limit is
kept: a test that lowers it shows the bound at a test's size)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.big_traces import MIB, long_agent_run, small_run_lines
from tests.support.generated_runs import run_with_big_result
from traces.events import ToolEnd
from traces.home import traces_dir
from traces.line_check import LINE_MAX
from traces.store import TraceStore


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def write_lines(path: Path, lines: list[bytes], mode: str = "wb") -> None:
    with open(path, mode) as handle:
        handle.writelines(lines)


def small_runs(home: Path, count: int, prefix: str = "small") -> list[str]:
    folder = traces_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"{prefix}-{number:06}" for number in range(count)]
    for run_id in names:
        (folder / f"{run_id}.jsonl").write_bytes(small_run_lines(run_id))
    return names


def test_a_long_run_read_again_after_it_grew(tmp_path: Path) -> None:
    # 90 turns of ~480 words: ~11,700 lines, 17 MB; read at 8,000 lines, as while it ran.
    # The grown part used to take DuckDB past its 1 GiB (every new line carried a copy of
    # the whole new text).
    source = long_agent_run(tmp_path / "src", "long-run")
    lines = lines_of(source)
    assert len(lines) > 10_000
    home = tmp_path / "home"
    trace = traces_dir(home) / source.name
    trace.parent.mkdir(parents=True)
    write_lines(trace, lines[:8000])
    with TraceStore.for_home(home) as store:
        first = store.ingest_home(home)
        assert (first.new_events, first.problems) == (8000, [])
        assert store.run("long-run").status == "incomplete"
        write_lines(trace, lines[8000:], "ab")
        grown = store.ingest_home(home)
        assert (grown.new_events, grown.problems) == (len(lines) - 8000, [])
        assert store.run("long-run").status == "completed"
        assert store.count_events("long-run") == len(lines)
        seqs = store.query("SELECT min(seq), max(seq), count(DISTINCT seq) FROM events")[1]
        assert seqs == [(0, len(lines) - 1, len(lines))]


def test_an_old_schema_long_run_grown_and_one_with_a_cut_line_in_the_middle(
    tmp_path: Path,
) -> None:
    source = long_agent_run(tmp_path / "src", "long-v1")
    lines = lines_of(source)
    start = json.loads(lines[0])
    start["schema_version"] = 1
    for field in ("origin", "client"):
        start.pop(field, None)
    lines[0] = (json.dumps(start, separators=(",", ":")) + "\n").encode()
    home = tmp_path / "home"
    old = traces_dir(home) / "long-v1.jsonl"
    old.parent.mkdir(parents=True)
    write_lines(old, lines[:8000])
    # A copy of another run with line 5,000 cut in half (a crash mid-write, then more).
    cut = [line.replace(b"long-v1", b"long-cut") for line in lines]
    cut[0] = lines_of(source)[0].replace(b"long-v1", b"long-cut")
    cut[4999] = cut[4999][: len(cut[4999]) // 2] + b"\n"
    write_lines(traces_dir(home) / "long-cut.jsonl", cut)
    with TraceStore.for_home(home) as store:
        first = store.ingest_home(home)
        assert first.problems == [f"{traces_dir(home) / 'long-cut.jsonl'}:5000: not valid JSON"]
        assert store.count_events("long-cut") == len(lines) - 1
        write_lines(old, lines[8000:], "ab")
        grown = store.ingest_home(home)
        assert (grown.new_events, grown.problems) == (len(lines) - 8000, [])
        run = store.run("long-v1")
        assert (run.status, run.origin) == ("completed", "agent")
        assert store.count_events("long-v1") == len(lines)


def test_lines_of_tens_of_mb_are_stored_and_read_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = traces_dir(home)
    folder.mkdir(parents=True)
    # One line of 40 MB, and a batch of sixteen 4 MB and four 12 MB lines.
    run_with_big_result(folder, "big-40", 40 * MIB)
    for number in range(16):
        run_with_big_result(folder, f"big-4-{number}", 4 * MIB)
    for number in range(4):
        run_with_big_result(folder, f"big-12-{number}", 12 * MIB)
    names = small_runs(home, 200)
    with TraceStore.for_home(home) as store:
        report = store.ingest_home(home)
        assert report.problems == []
        assert report.new_runs == 21 + len(names)
        assert report.new_events == 21 * 4 + 2 * len(names)
        end = store.events("big-40", types=["tool_end"])[0]
        assert isinstance(end, ToolEnd) and len(end.result) == 40 * MIB
        text = store.query("SELECT event FROM events WHERE run_id = 'big-12-3' AND seq = 2")
        assert text[1][0][0].encode() + b"\n" == lines_of(folder / "big-12-3.jsonl")[2]


def test_a_line_over_the_stores_limit_is_one_problem_and_the_rest_of_its_run_goes_in(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    path = run_with_big_result(traces_dir(home), "too-big", LINE_MAX + MIB)
    small_runs(home, 10)
    with TraceStore.for_home(home) as store:
        report = store.ingest_home(home)
        size = len(lines_of(path)[2]) - 1
        assert report.problems == [
            f"{path}:3: line of {size:,} bytes is over the limit of {LINE_MAX:,}; skipped"
        ]
        assert store.run("too-big").status == "completed"
        seqs = store.query("SELECT seq FROM events WHERE run_id = 'too-big' ORDER BY seq")[1]
        assert seqs == [(0,), (1,), (3,)]
        assert store.count_runs() == 11


def test_a_file_duckdb_cannot_take_is_one_problem_line_and_hides_no_other(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    big = run_with_big_result(traces_dir(home), "needs-memory", 48 * MIB)
    names = small_runs(home, 300)
    with TraceStore.for_home(home) as store:
        # A machine with little memory for DuckDB: ingest keeps a lower limit as it is.
        store.query("SET memory_limit = '120MB'")
        report = store.ingest_home(home)
        assert len(report.problems) == 1, report.problems
        assert report.problems[0].startswith(
            f"{big}:3: cannot be ingested from this line on (Out of Memory"
        )
        assert "disk" not in report.problems[0]
        # Every other run, and the lines before it of its own run, went in.
        assert store.count_runs() == len(names) + 1
        assert store.count_events("needs-memory") == 2
        # Left as it is, the file is not tried again on every look ...
        assert store.ingest_home(home).problems == []
        # ... but once it changes, with the memory it needs, the rest of it goes in.
        store.query("RESET memory_limit")
        with open(big, "ab") as handle:
            handle.write(b"\n")
        again = store.ingest_home(home)
        assert (again.new_events, again.problems) == (2, [])
        assert store.run("needs-memory").status == "completed"
        assert store.count_events("needs-memory") == 4


def test_many_small_runs_go_in_within_a_small_memory_limit(tmp_path: Path) -> None:
    # 1,000,000 runs under the ingest's 1 GiB failed at once; 40,000 under 100 MB did the
    # same at a test's size. In batches, each fits, whatever the number of runs.
    home = tmp_path / "home"
    names = small_runs(home, 40_000)
    with TraceStore.for_home(home) as store:
        store.query("SET memory_limit = '100MB'")
        report = store.ingest_home(home)
        assert (report.new_runs, report.new_events, report.problems) == (40_000, 80_000, [])
        assert store.run(names[-1]).status == "completed"


KILLER = """
import os, signal, sys
from pathlib import Path
from traces.store import TraceStore

def progress(what: str, done: float) -> None:
    if "(batch 2," in what:  # batch 1 is committed
        os.kill(os.getpid(), signal.SIGKILL)

home = Path(sys.argv[1])
with TraceStore.for_home(home) as store:
    store.ingest_home(home, progress)
"""


def test_an_ingest_killed_half_way_is_finished_by_the_next(tmp_path: Path) -> None:
    # Ten long runs (170 MB) take three batches; the kill comes as the second starts.
    home = tmp_path / "home"
    folder = traces_dir(home)
    paths = [long_agent_run(folder, f"long-{number}") for number in range(10)]
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, str(home)], capture_output=True, text=True, check=False
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with TraceStore.for_home(home) as store:
        kept = store.count_runs()
        assert 0 < kept < 10  # the first batch was kept
        report = store.ingest_home(home)
        assert report.problems == []
        for path in paths:
            run_id = path.stem
            assert store.run(run_id).status == "completed"
            assert store.count_events(run_id) == len(lines_of(path))
        duplicates = store.query(
            "SELECT count(*) FROM (SELECT run_id, seq FROM event_rows "
            "GROUP BY ALL HAVING count(*) > 1)"
        )[1]
        assert duplicates == [(0,)]


def test_read_commands_answer_on_a_home_with_a_big_capture(tmp_path: Path) -> None:
    # One big capture once hid every other run from `runs`.
    home = tmp_path / "home"
    run_with_big_result(traces_dir(home), "big-capture", 40 * MIB)
    names = small_runs(home, 50)
    env = {**os.environ, "WORKBENCH_HOME": str(home)}
    code = "import sys; from workbench.cli import main; sys.exit(main())"
    listed = subprocess.run(
        [sys.executable, "-c", code, "runs", "--json", "--limit", "100"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == len(names) + 1
