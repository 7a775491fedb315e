"""Fixtures for the engine tests; helpers live in engine_support.py (same folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.engine_support import Project


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path / "project"
    root.mkdir()
    (root / "config.toml").write_text('name = "demo"\nport = 8080\n', encoding="utf-8")
    (root / "README.md").write_text("# Demo\nThe port lives in config.toml.\n", encoding="utf-8")
    return Project(home=tmp_path / "home", root=root)
