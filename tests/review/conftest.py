"""The review tests' home: a copy of the demo's traces (the demo recorded once per module)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from traces.home import traces_dir


@pytest.fixture
def home(demo_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo's traces and its suite's script, noted by alice. The traces only: the store
    keeps absolute paths, and is rebuilt from them here."""
    copy = tmp_path / "home"
    shutil.copytree(traces_dir(demo_home), traces_dir(copy))
    shutil.copy(demo_home / "demo-suite-script.json", copy / "demo-suite-script.json")
    monkeypatch.setenv("WORKBENCH_AUTHOR", "alice")
    return copy
