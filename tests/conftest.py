"""Fixtures shared by the whole suite. Keep each one small and say what it gives."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.demo import copied_home, record_demo
from tests.support.read_only import read_only

GOLDEN_V1 = Path(__file__).parent / "fixtures" / "traces" / "v1"


@pytest.fixture
def golden_dir() -> Path:
    """The schema v1 golden traces: one run per status, never edited."""
    return GOLDEN_V1


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runs `workbench demo` records (one of each status, its suite's results in the
    store), recorded once per module: read it, or change a copy (`demo_copy`)."""
    return record_demo(tmp_path_factory.mktemp("demo") / "home")


@pytest.fixture
def demo_copy(demo_home: Path, tmp_path: Path) -> Path:
    """A copy of the demo's home, its store too, for one test to change."""
    return copied_home(demo_home, tmp_path / "demo")


@pytest.fixture
def wb_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty workbench home folder, also set as $WORKBENCH_HOME."""
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    monkeypatch.setenv("WORKBENCH_HOME", str(home))
    return home


@pytest.fixture
def read_only_home(wb_home: Path, golden_dir: Path) -> Iterator[Path]:
    """A home of four golden runs in its store and a fifth trace not ingested yet, seen
    through a path nothing can write (`tests.support.read_only`)."""
    from traces.store import TraceStore

    traces = sorted(golden_dir.glob("*.jsonl"))
    for path in traces[:4]:
        shutil.copy(path, wb_home / "traces" / path.name)
    with TraceStore.for_home(wb_home) as store:
        store.ingest_home(wb_home)
    shutil.copy(traces[4], wb_home / "traces" / traces[4].name)
    with read_only(wb_home) as home:
        yield home


@pytest.fixture(autouse=True)
def _no_real_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reaches a real model by accident: only endpoints on this machine may be
    called (subprocesses inherit the switch), and a developer's model settings stay out."""
    monkeypatch.setenv("WORKBENCH_LOCAL_MODELS_ONLY", "1")
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "WORKBENCH_MODEL", "WORKBENCH_HOME"):
        monkeypatch.delenv(name, raising=False)
