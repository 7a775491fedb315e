"""Cases from recorded runs (capture-case, from_run) and multi-turn sequences, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from workbench.engine.http.model_server import ModelServer
from workbench.engine.regress.suite import load_suite

CLI = "import sys; from workbench.cli import main; sys.exit(main())"


def workbench(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", CLI, *args, "--home", str(home)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def model_flags(server: ModelServer) -> list[str]:
    return ["--base-url", server.base_url, "--model", "chooser"]


def record_run(server: ModelServer, home: Path, root: Path, task: str) -> str:
    result = workbench("run", task, "--root", str(root), "--json", *model_flags(server), home=home)
    assert result.returncode == 0, result.stdout + result.stderr
    report, _ = json.JSONDecoder().raw_decode(result.stdout)
    return str(report["run_id"])


def test_capture_case_then_replay_the_recorded_decision(
    tmp_path: Path, chooser_server: ModelServer, project: Path
) -> None:
    home = tmp_path / "home"
    run_id = record_run(
        chooser_server, home, project, "List the files in the docs folder, then read notes.txt"
    )
    suite = tmp_path / "suites" / "captured.wbsuite.toml"
    suite.parent.mkdir()

    captured = workbench(
        "capture-case", run_id[:10], "--turn", "2", "--suite", str(suite), home=home
    )
    assert captured.returncode == 0, captured.stderr
    case = load_suite(suite).cases[0]
    assert case.from_run == run_id and case.turn == 2 and case.expect_tool
    assert (suite.parent / "traces" / f"{run_id}.jsonl").is_file()  # copied for CI
    tool = case.expect_tool

    passing = workbench(
        "test", str(suite), "--samples", "2", *model_flags(chooser_server), home=home
    )
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert f"{tool} ×2" in passing.stdout

    # The trace copy next to the suite is enough: a fresh home has never seen the run.
    edited = workbench(
        "test",
        str(suite),
        "--tool-description",
        f"{tool}=Translate poems into Latin. Never use it for anything else.",
        *model_flags(chooser_server),
        home=tmp_path / "fresh-home",
    )
    assert edited.returncode == 1, edited.stdout + edited.stderr
    assert "FAIL" in edited.stdout

    again = workbench("capture-case", run_id, "--turn", "2", "--suite", str(suite), home=home)
    assert again.returncode == 2 and "appears twice" in again.stderr
    no_turn = workbench("capture-case", run_id, "--turn", "99", "--suite", str(suite), home=home)
    assert no_turn.returncode == 2 and "turn 99" in no_turn.stderr
    assert no_turn.stderr.count("\n") == 1
    unknown = workbench("capture-case", "nope", "--turn", "1", "--suite", str(suite), home=home)
    assert unknown.returncode == 2 and "no trace for run 'nope'" in unknown.stderr

    # lint-tools reads the schemas a recorded run offered.
    linted = workbench("lint-tools", "--run", run_id, "--json", home=home)
    assert json.loads(linted.stdout)["tools"] == 4, linted.stderr


def test_a_sequence_runs_read_only_tools_for_real(
    tmp_path: Path, chooser_server: ModelServer, project: Path
) -> None:
    suite = tmp_path / "seq.wbsuite.toml"
    suite.write_text(
        """
[suite]
name = "sequence"
tools = "builtin"

[[case]]
id = "look-then-read"
task = "List the files in the docs folder."
expect_sequence = ["list_dir", "read_file"]
expect_not_tool = "calculator"
""",
        encoding="utf-8",
    )
    home = tmp_path / "home"
    result = workbench(
        "test",
        str(suite),
        "--root",
        str(project),
        "--json",
        *model_flags(chooser_server),
        home=home,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    sample = json.loads(result.stdout)["cases"][0]["samples"][0]
    assert sample["chosen"].startswith("list_dir → read_file")
    trace = (home / "traces" / f"{sample['run_id']}.jsonl").read_text(encoding="utf-8")
    ends = [json.loads(line) for line in trace.splitlines() if '"tool_end"' in line]
    assert ends[0]["name"] == "list_dir" and "docs/" in ends[0]["result"]  # really ran
