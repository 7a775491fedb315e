"""scripts/lib.sh, which scripts/demo.sh and scripts/test.sh install with: a line per step
saying what it fetches, a failing step's whole output, and no install at all while
pyproject.toml is unchanged. Run with bash on a copy of the project's pyproject.toml and a
stand-in `.venv/bin/python` that records how it was called (no network)."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$(dirname "$0")/../calls.log"
echo "Collecting textual"
if [ -f "$(dirname "$0")/../fail" ]; then echo "ERROR: no matching distribution" >&2; exit 1; fi
echo "Successfully installed agent-workbench"
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "lib.sh", tmp_path / "scripts" / "lib.sh")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON, encoding="utf-8")
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return tmp_path


def install(checkout: Path, extras: str) -> subprocess.CompletedProcess[str]:
    script = f'set -euo pipefail; source scripts/lib.sh; install_venv "{extras}"'
    return subprocess.run(
        ["bash", "-c", script], cwd=checkout, capture_output=True, text=True, timeout=60
    )


def calls(checkout: Path) -> list[str]:
    log = checkout / ".venv" / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_each_step_is_one_line_saying_what_it_fetches(checkout: Path) -> None:
    proc = install(checkout, "[dev,otel]")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("-- installing the project and its dependencies")
    assert "with extras [dev,otel]" in lines[0] and "from PyPI into .venv" in lines[0]
    assert lines[1].startswith("   done in ") and len(lines) == 2
    assert "Collecting" not in proc.stdout  # pip's own output stays out of the log
    assert calls(checkout) == ["-m pip install -e .[dev,otel]"]


def test_an_install_that_is_up_to_date_is_skipped(checkout: Path) -> None:
    assert install(checkout, "[dev,otel]").returncode == 0
    again = install(checkout, "[dev,otel]")
    assert again.returncode == 0
    assert again.stdout.startswith("-- .venv is up to date with pyproject.toml")
    assert install(checkout, "").returncode == 0  # the demo's: fewer extras, also up to date
    assert install(checkout, "[otel]").returncode == 0
    assert len(calls(checkout)) == 1
    install(checkout, "[frameworks]")  # an extra not installed yet
    pyproject = checkout / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "\n# changed\n", encoding="utf-8")
    install(checkout, "")  # pyproject.toml changed
    assert calls(checkout)[1:] == ["-m pip install -e .[frameworks]", "-m pip install -e ."]


def test_a_failing_step_shows_all_its_output(checkout: Path) -> None:
    (checkout / ".venv" / "fail").touch()
    proc = install(checkout, "")
    assert proc.returncode != 0
    assert "Collecting textual" in proc.stderr and "ERROR: no matching distribution" in proc.stderr
    assert "setup step failed (exit 1): .venv/bin/python -m pip install -e ." in proc.stderr
    assert not (checkout / ".venv" / ".workbench-install").exists()  # tried again next time


def test_a_second_environment_has_its_own_install_and_stamp(checkout: Path) -> None:
    # scripts/install-lake-services.sh's .venv-lake: the lake extra's DuckDB beside .venv's.
    lake_python = checkout / ".venv-lake" / "bin" / "python"
    lake_python.parent.mkdir(parents=True)
    shutil.copy(checkout / ".venv" / "bin" / "python", lake_python)
    script = 'set -euo pipefail; source scripts/lib.sh; install_venv "[dev,lake]" .venv-lake'
    for _ in range(2):
        proc = subprocess.run(
            ["bash", "-c", script], cwd=checkout, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("-- .venv-lake is up to date with pyproject.toml and [dev,lake]")
    log = checkout / ".venv-lake" / "calls.log"
    assert log.read_text(encoding="utf-8").splitlines() == ["-m pip install -e .[dev,lake]"]
    assert calls(checkout) == []  # .venv untouched
    assert (checkout / ".venv-lake" / ".workbench-install").is_file()
