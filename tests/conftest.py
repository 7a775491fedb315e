"""Fixtures shared by the whole suite. Keep each one small and say what it gives."""

from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN_V1 = Path(__file__).parent / "fixtures" / "traces" / "v1"


@pytest.fixture
def golden_dir() -> Path:
    """The schema v1 golden traces: one run per status, never edited."""
    return GOLDEN_V1


@pytest.fixture
def wb_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty workbench home folder, also set as $WORKBENCH_HOME."""
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    monkeypatch.setenv("WORKBENCH_HOME", str(home))
    return home
