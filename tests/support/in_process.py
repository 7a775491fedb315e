"""`workbench` called in this process on a home, its output captured: for tests that read
what a command printed without paying for a subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.cli import main


def wb(home: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The exit code, stdout and stderr of `workbench --home HOME ARGV…`."""
    capsys.readouterr()
    code = main(["--home", str(home), *argv])
    out, err = capsys.readouterr()
    return code, out, err
