"""`workbench` called in this process on a home, its output captured: for tests that read
what a command printed without paying for a subprocess."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workbench.cli import main


def wb(home: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The exit code, stdout and stderr of `workbench --home HOME ARGV…`."""
    capsys.readouterr()
    code = main(["--home", str(home), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def wb_json(home: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """What `workbench --home HOME ARGV… --json` printed, read as JSON (it must exit 0)."""
    code, out, err = wb(home, capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def note_json(home: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    """The annotation record `workbench note ARGV…` wrote."""
    record: dict[str, Any] = wb_json(home, capsys, "note", *argv)
    return record
