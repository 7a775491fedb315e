"""The TUI's backend and `mcp-serve`'s tools read the lake when the process chose it
(`--lake` on `workbench tui` and `workbench mcp-serve`): the same runs and searches as the
home's store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lake.test_lake_reads import ok
from traces.store import lake
from workbench.engine.mcp_server.handlers import Workbench
from workbench.tui.backend import Backend, RunFilter

pytestmark = pytest.mark.lake


@pytest.fixture
def pushed(demo_home: Path, lake_url: str) -> Iterator[Path]:
    ok(demo_home, "push", "--all", "--lake", lake_url)
    yield demo_home
    lake.choose(None)


def _both(read, url: str):
    lake.choose(None)
    local = read()
    lake.choose(url)
    return local, read()


def test_the_tui_backend_reads_the_lake(pushed: Path, lake_url: str) -> None:
    backend = Backend(pushed, idle_release_s=0.05)

    def read():
        rows = backend.runs(RunFilter(), 0, 100)
        hits = backend.search("celsius")
        backend.release()
        return [row.run_id for row in rows], [(hit.run_id, hit.seq) for hit in hits]

    local, on_lake = _both(read, lake_url)
    assert on_lake == local and len(local[0]) == 6


def test_mcp_serve_tools_read_the_lake(pushed: Path, lake_url: str) -> None:
    tools = Workbench(pushed)

    def read():
        listed = tools.list_runs(limit=50, offset=0)
        tools.close()
        return listed

    local, on_lake = _both(read, lake_url)
    assert on_lake == local and local["total"] == 6
