"""Shared fixture: a small project folder for the file tools to read."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# demo\nA tiny demo project.\n", encoding="utf-8")
    (root / "src" / "main.py").write_text("print('hello')\n# TODO: greet by name\n")
    return root
