"""The pytest plugin runs a suite file as tests, one per case, in a real pytest subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.regress.test_workbench_test import MISLEADING, SUITE
from workbench.engine.http.model_server import ModelServer


def pytest_run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=folder, timeout=120)


def test_a_suite_file_runs_as_one_test_per_case(
    tmp_path: Path, chooser_server: ModelServer, project: Path
) -> None:
    (tmp_path / "tools.wbsuite.toml").write_text(SUITE, encoding="utf-8")
    flags = ["--wb-base-url", chooser_server.base_url, "--wb-model", "chooser"]
    flags += ["--wb-home", str(tmp_path / "home"), "--wb-root", str(project)]

    passing = pytest_run(tmp_path, *flags, "--wb-save-baseline", "main")
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "3 passed" in passing.stdout
    assert "tools.wbsuite.toml::read-notes" in passing.stdout

    edited = pytest_run(
        tmp_path,
        *flags,
        "--wb-baseline",
        "main",
        "--wb-tool-description",
        f"read_file={MISLEADING}",
    )
    assert edited.returncode == 1, edited.stdout + edited.stderr
    assert "2 failed, 1 passed" in edited.stdout
    assert "chose list_dir" in edited.stdout and "since baseline 'main'" in edited.stdout
    # The description's word diff is in the failure text.
    assert "{+Evaluate arithmetic expressions exactly.+}" in edited.stdout


def test_without_a_model_each_case_fails_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "tools.wbsuite.toml").write_text(SUITE, encoding="utf-8")
    clean_env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no OPENAI_* variables
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    run = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=clean_env)
    assert run.returncode == 1, run.stdout
    assert "3 failed" in run.stdout and "no model configured" in run.stdout
    assert "Traceback" not in run.stdout

    (tmp_path / "broken.wbsuite.toml").write_text("[suite\n", encoding="utf-8")
    broken = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=clean_env)
    assert broken.returncode == 2  # pytest's collection error
    assert "broken.wbsuite.toml: not valid TOML" in broken.stdout
