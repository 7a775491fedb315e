"""A run id read from a trace is data: exporting such a run from the TUI writes inside
<home>/exports/ under a safe name, whatever the id says."""

from __future__ import annotations

from pathlib import Path

from tests.support.hostile import CLIMBING, write_renamed
from tests.tui.conftest import run_shown, said, settle
from workbench.tui import WorkbenchApp
from workbench.tui.paged_list import PagedList


def _all_files(folder: Path) -> set[Path]:
    return {path for path in folder.rglob("*") if path.is_file()}


async def test_exporting_a_run_whose_id_climbs_writes_inside_exports(tmp_path: Path) -> None:
    home = tmp_path / "a" / "b" / "home"
    write_renamed(home / "traces", CLIMBING)
    target = home / "exports" / "../../x"  # where the id would put the file: make it exist
    target.resolve().mkdir(parents=True)
    before = _all_files(tmp_path)
    app = WorkbenchApp(home)
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        runs = app.screen.query_one("#runs-list", PagedList)
        await settle(pilot, lambda: runs.total == 1)
        app.open_run(CLIMBING)
        await run_shown(pilot)
        await pilot.press("x")
        exports = home / "exports"
        await settle(pilot, lambda: any(m.startswith("Exported") for m in said(app)))
        told = said(app)
    written = _all_files(tmp_path) - before - {home / "workbench.duckdb"}
    (exported,) = [path for path in written if path.suffix == ".md"]
    assert exported.parent == exports
    assert ".." not in exported.name and "/" not in exported.stem
    assert list(target.resolve().iterdir()) == []
    assert "in Tokyo it is 09:00" in exported.read_text(encoding="utf-8")
    assert str(exported) in told[-1]
