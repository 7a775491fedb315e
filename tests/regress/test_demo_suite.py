"""Regression testing tried from the demo, through the CLI as a subprocess: the suite the
demo writes passes offline with the README's command, the README's description edit
regresses against the saved baseline, and a scripted model answers every sample."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
CLI = "import sys; from workbench.cli import main; sys.exit(main())"
# No model from the environment: the suite's own script must be what answers.
MODEL_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "WORKBENCH_MODEL", "WORKBENCH_HOME")


def workbench(*args: str, cwd: Path, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in MODEL_ENV}
    if home is not None:
        env["WORKBENCH_HOME"] = str(home)
    command = [sys.executable, "-c", CLI, *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


def readme_commands() -> list[list[str]]:
    """The README's `workbench test <home>/demo-suite…` commands, as argument lists."""
    lines = README.read_text(encoding="utf-8").splitlines()
    wanted = "workbench test <home>/demo-suite.wbsuite.toml"
    return [shlex.split(line)[1:] for line in lines if line.startswith(wanted)]


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("demo") / "home"
    proc = workbench("--home", str(home), "demo", "--no-tui", cwd=home.parent)
    assert proc.returncode == 0, proc.stderr
    assert f"demo suite: {home / 'demo-suite.wbsuite.toml'} (3 cases × 3 samples" in proc.stdout
    return home


def test_the_readme_runs_the_demo_suite_offline_then_an_edit_regresses(
    demo_home: Path, tmp_path: Path
) -> None:
    passing, regressing = readme_commands()
    assert "--tool-description" not in passing and "--tool-description" in regressing

    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        args = [arg.replace("<home>", str(demo_home)) for arg in args]
        return workbench(*args, cwd=tmp_path, home=demo_home)

    proc = run(passing)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed of 3 case(s), 9 sample(s)" in proc.stdout

    proc = run(regressing)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FAIL  list-after-missing-file  0/3 0% (was 100%)" in proc.stdout
    assert "tool schema changes since baseline 'demo':" in proc.stdout
    assert "{+folder's files.+}" in proc.stdout and "find out what exists" in proc.stdout
    assert "2 passed, 1 failed of 3 case(s)" in proc.stdout


def test_the_demo_suite_names_the_demos_runs_and_its_script(demo_home: Path) -> None:
    text = (demo_home / "demo-suite.wbsuite.toml").read_text(encoding="utf-8")
    assert 'script = "demo-suite-script.json"' in text
    runs = json.loads(
        workbench(
            "--home", str(demo_home), "runs", "--kind", "agent", "--json", cwd=demo_home
        ).stdout
    )
    named = [run["run_id"] for run in runs if run["run_id"] in text]
    assert len(named) == 3  # the cases' from_run


def test_a_demo_run_again_says_it_adds_its_runs(demo_home: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = workbench("--home", str(home), "demo", "--no-tui", cwd=tmp_path)
    assert first.returncode == 0 and "already holds" not in first.stdout
    again = workbench("--home", str(home), "demo", "--no-tui", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "already holds an earlier demo's runs: these 6 are added beside them" in again.stdout
    proc = workbench("test", str(home / "demo-suite.wbsuite.toml"), cwd=tmp_path, home=home)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # rewritten for the new runs


def test_each_sample_meets_the_whole_script(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("release on Friday\n", encoding="utf-8")
    script = tmp_path / "one-step.json"
    step = {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]}
    script.write_text(json.dumps([step]), encoding="utf-8")
    suite = tmp_path / "s.wbsuite.toml"
    suite.write_text(
        '[suite]\nname = "s"\nsamples = 3\ntools = "builtin"\n\n'
        '[[case]]\nid = "read"\ntask = "What do the notes say?"\nexpect_tool = "read_file"\n'
        '\n[[case]]\nid = "read-again"\ntask = "And now?"\nexpect_tool = "read_file"\n',
        encoding="utf-8",
    )
    home = tmp_path / "home"
    args = ["--home", str(home), "test", str(suite), "--script", str(script)]
    proc = workbench(*args, "--root", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed of 2 case(s), 6 sample(s)" in proc.stdout
