"""A run whose trace cannot be written whole (the disk fills up) still runs to its end, but
says so in one line and exits non-zero; the trace it leaves ends at its last whole line, so
it is read and ingested as an incomplete run once there is room again.

The full disk is a file size limit (RLIMIT_FSIZE) on the `workbench run` process: no root,
no mount. Python ignores SIGXFSZ, so a write past the limit fails with EFBIG as a write to a
full disk fails with ENOSPC, after writing what fits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import file_size_limit
from traces.reader import read_trace
from traces.store import TraceStore

CLI = "import sys; from workbench.cli import main; sys.exit(main())"


def run_with_room(
    tmp_path: Path, project: Path, room: int
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`workbench run` of a three-turn script, able to write `room` bytes per file."""
    steps = [
        {
            "content": "Reading.",
            "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}],
        },
        {"content": "Listing.", "tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]},
        {"content": "It is a tiny demo project."},
    ]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": steps}), encoding="utf-8")
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "WORKBENCH_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    command = [sys.executable, "-c", CLI, "run", "What is this?", "--script", str(script)]
    proc = subprocess.run(
        [*command, "--root", str(project), "--home", str(home)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=file_size_limit(room),
    )
    return proc, home


@pytest.mark.parametrize("room", [0, 1500, 8000, 15000])
def test_a_trace_cut_by_a_full_disk_fails_the_run_and_reads_to_its_last_whole_line(
    tmp_path: Path, project: Path, room: int
) -> None:
    proc, home = run_with_room(tmp_path, project, room)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode != 0, proc.stdout + proc.stderr
    (trace,) = (home / "traces").glob("*.jsonl")
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"workbench: the trace {trace} could not be written whole ("), last
    # A run whose trace was cut never shows as completed: it reads as incomplete.
    (summary,) = [line for line in proc.stdout.splitlines() if line.startswith("run ")]
    assert summary.startswith(f"run {trace.stem}: incomplete — its trace could not be written")
    assert "completed" not in proc.stdout, proc.stdout
    data = trace.read_bytes()
    assert len(data) <= room and (data == b"" or data.endswith(b"\n"))
    result = read_trace(trace)
    assert result.problems == [] and not result.truncated_tail
    assert [event.seq for event in result.events] == list(range(len(result.events)))
    assert data.count(b"\n") == len(result.events)
    if room > 3677:  # room for run_start (3677 bytes) and more
        assert len(result.events) > 1 and result.events[-1].type != "run_end"

    runs = subprocess.run(
        [sys.executable, "-c", CLI, "--home", str(home), "runs", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert runs.returncode == 0 and "Traceback" not in runs.stderr, runs.stderr
    listed = json.loads(runs.stdout)
    if result.events:
        (run,) = listed
        assert run["status"] == "incomplete" and run["run_id"] == trace.stem
        with TraceStore.for_home(home, read_only=True) as store:
            assert store.count_events(run["run_id"]) == len(result.events)


def test_a_run_with_room_for_its_trace_still_exits_0(tmp_path: Path, project: Path) -> None:
    proc, home = run_with_room(tmp_path, project, 10_000_000)
    assert proc.returncode == 0, proc.stderr
    assert "could not be written" not in proc.stderr
    (trace,) = (home / "traces").glob("*.jsonl")
    assert read_trace(trace).events[-1].type == "run_end"
