"""The README is the front door: its two set-up commands must exist and CI must run the
same test command the README gives."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", quick_start, flags=re.S)


def test_readme_gives_a_demo_command_and_a_test_command_that_exist() -> None:
    demo, test = _readme_commands()[:2]
    for command in (demo, test):
        script = command.split()[-1]
        assert (ROOT / script).is_file(), f"README names {script}, which does not exist"
    assert "demo" in demo and "test" in test


def test_ci_runs_the_readme_test_command() -> None:
    test_command = _readme_commands()[1].strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()


def test_readme_shows_the_exit_codes_every_command_uses() -> None:
    from workbench.cli.common import EXIT_CODES

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert EXIT_CODES in readme
