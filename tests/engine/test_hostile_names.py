"""Run ids are data: a run id or prefix with glob characters or path parts is one line and
exit 2, never a traceback or a pattern; a run whose recorded id climbs out of a folder is
still found (by the store) and never makes a path."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.hostile import CLIMBING, GOLDEN_V1, write_renamed
from traces.writer import JsonlWriter

CLI = "import sys; from workbench.cli import main; sys.exit(main())"


def workbench(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", CLI, "--home", str(home), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("workbench:")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    (folder / "traces").mkdir(parents=True)
    for trace in sorted(GOLDEN_V1.glob("*.jsonl"))[:3]:
        shutil.copy(trace, folder / "traces" / trace.name)
    return folder


@pytest.mark.parametrize(
    "command",
    [
        ["export", "ab*"],
        ["export", "/"],
        ["replay", "/"],
        ["replay", "ab*"],
        ["diff", "*", "*"],
        ["fork", "**", "--turn", "1"],
        ["lint-tools", "--run", "[a-z]*"],
        ["capture-case", "ab*", "--turn", "1", "--suite", "s.wbsuite.toml"],
    ],
)
def test_a_run_id_with_glob_characters_is_one_line_and_exit_2(
    home: Path, command: list[str]
) -> None:
    proc = workbench(home, *command)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = one_error_line(proc)
    named = next(arg for arg in command[1:] if not arg.startswith("-"))
    assert "run" in line and repr(named) in line


def test_a_suite_case_from_a_glob_run_is_one_line_and_exit_2(home: Path, tmp_path: Path) -> None:
    suite = tmp_path / "glob.wbsuite.toml"
    suite.write_text(
        '[suite]\nname = "s"\n\n[[case]]\nid = "glob"\nfrom_run = "*"\nturn = 1\n'
        'expect_tool = "read_file"\n',
        encoding="utf-8",
    )
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"content": "nothing"}]}), encoding="utf-8")
    proc = workbench(home, "test", str(suite), "--script", str(script))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no trace for run '*'" in one_error_line(proc)


def test_a_run_whose_id_climbs_is_exported_by_its_id_without_a_path(
    home: Path, tmp_path: Path
) -> None:
    write_renamed(home / "traces", CLIMBING, name="hostile")
    outside = home / "traces" / f"{CLIMBING}.jsonl"  # what joining the id would read
    outside.parent.resolve().mkdir(parents=True, exist_ok=True)
    outside.resolve().write_text("not a trace\n", encoding="utf-8")
    proc = workbench(home, "export", CLIMBING, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["run_id"] == CLIMBING


def test_the_trace_writer_refuses_a_run_id_that_is_not_a_file_name(tmp_path: Path) -> None:
    for run_id in (CLIMBING, "a/b", "..", ".hidden", "", "x" * 200):
        with pytest.raises(ValueError, match="cannot name a trace file"):
            JsonlWriter(tmp_path / "traces", run_id)
    assert list(tmp_path.iterdir()) == []


LONG = "a" * 5000  # longer than any file name may be


@pytest.mark.parametrize(
    "command",
    [
        ["show", LONG],
        ["replay", LONG],
        ["replay", f"{LONG}.jsonl"],
        ["show", f"{LONG}.wbundle"],
        ["export", LONG],
        ["fork", LONG, "--turn", "1"],
        ["bundle", LONG, "-o", "out.wbundle"],
    ],
    ids=["show", "replay", "replay-file", "show-bundle", "export", "fork", "bundle"],
)
def test_a_run_id_too_long_for_a_file_name_is_one_line_and_exit_2(
    home: Path, command: list[str]
) -> None:
    proc = workbench(home, *command)
    assert proc.returncode == 2, proc.stdout + proc.stderr[-2000:]
    one_error_line(proc)
