"""The review tests' home: the demo's runs, recorded once per module and copied per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.demo import record_demo
from traces.home import traces_dir


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_demo(tmp_path_factory.mktemp("demo") / "home")


@pytest.fixture
def home(demo_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo's traces and its suite's script, noted by alice. The traces only: the store
    keeps absolute paths, and is rebuilt from them here."""
    copy = tmp_path / "home"
    shutil.copytree(traces_dir(demo_home), traces_dir(copy))
    shutil.copy(demo_home / "demo-suite-script.json", copy / "demo-suite-script.json")
    monkeypatch.setenv("WORKBENCH_AUTHOR", "alice")
    return copy
