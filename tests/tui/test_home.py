"""The TUI on a home that does not exist or cannot be written: a named home that is not
there is one line and creates nothing; a read-only home is browsed as it is, and what would
write there is refused in one line each (its regression results: `test_journey.py`). The
CLI entry runs as a subprocess where its exit code and stderr matter, the app through Pilot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import Static

from tests.support.read_only import read_only
from tests.tui.conftest import COMPLETED, has_said, notices, plain, said, settle, writes_refused
from traces.store import TraceStore
from workbench.engine.recording.replay.verify import replay_run
from workbench.engine.recording.runs.load import load_recording
from workbench.tui import WorkbenchApp
from workbench.tui.paged_list import PagedList
from workbench.tui.regress_screen import RegressScreen
from workbench.tui.replay_screen import ReplayScreen

SIZE = (160, 45)
CLI = "import sys; from workbench.cli import main; sys.exit(main())"


def workbench(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI, *args],
        cwd=cwd,
        env=os.environ | (env or {}),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    return proc.stderr


def _runs(app: WorkbenchApp) -> PagedList:
    return app.screen.query_one("#runs-list", PagedList)


# ---------------------------------------------------------------- a home that is not there


@pytest.mark.parametrize("how", ["--home", "tui --home", "$WORKBENCH_HOME"])
def test_a_mistyped_home_is_one_line_and_creates_nothing(tmp_path: Path, how: str) -> None:
    typo = tmp_path / "typo"
    if how == "$WORKBENCH_HOME":
        proc = workbench(cwd=tmp_path, env={"WORKBENCH_HOME": str(typo)})
    else:
        proc = workbench(*how.split(), str(typo), cwd=tmp_path)
    assert proc.returncode == 2
    line = one_line(proc)
    assert line.startswith(f"workbench: no workbench home at {typo}") and "--home" in line
    assert sorted(tmp_path.iterdir()) == []  # no typo folder, no ./.workbench either


def test_a_home_under_a_file_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    proc = workbench("--home", str(blocker / "home"), cwd=tmp_path)
    assert proc.returncode == 2
    assert "no workbench home at" in one_line(proc)


def in_terminal(*args: str, cwd: Path, until: bytes) -> bytes:
    """Run `workbench ARGS` in a pseudo-terminal, as in a user's shell, until its screen
    shows `until`; then press q. What it drew; the exit code must be 0."""
    import pty
    import select

    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, *args],
        cwd=cwd,
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env=os.environ | {"TERM": "xterm-256color", "COLUMNS": "160", "LINES": "40"},
    )
    os.close(secondary)
    seen = b""
    try:
        while until not in seen:
            ready, _, _ = select.select([primary], [], [], 60)
            assert ready, f"the TUI did not show {until!r}: {seen[-500:]!r}"
            seen += os.read(primary, 65536)
        os.write(primary, b"q")
        while proc.poll() is None:  # read what it draws as it closes, else it may block
            ready, _, _ = select.select([primary], [], [], 60)
            assert ready or proc.poll() is not None, "the TUI did not quit"
            if ready:
                try:
                    seen += os.read(primary, 65536)
                except OSError:  # the terminal closed with the process
                    break
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(primary)
    assert b"Traceback" not in seen
    return seen


def test_the_default_home_is_made_on_first_use(tmp_path: Path) -> None:
    """A first `workbench` in a folder makes ./.workbench, as `workbench run` would, and
    opens on it (the runs screen has counted the new store)."""
    in_terminal(cwd=tmp_path, until=b"0 runs")
    assert (tmp_path / ".workbench" / "traces").is_dir()
    assert (tmp_path / ".workbench" / "workbench.duckdb").is_file()


def test_a_read_only_home_opens_in_a_terminal(read_only_home: Path, tmp_path: Path) -> None:
    in_terminal("--home", str(read_only_home), cwd=tmp_path, until=b"read-only home")


def test_a_default_home_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    with read_only(folder) as project:
        proc = workbench(cwd=project)
        assert proc.returncode == 2
        line = one_line(proc)
        assert "cannot create .workbench" in line and "--home" in line
    assert sorted(folder.iterdir()) == []


# ---------------------------------------------------------------- a home that cannot be written


def test_a_read_only_home_without_a_store_is_one_line(tmp_path: Path, golden_dir: Path) -> None:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    (home / "traces" / f"{COMPLETED}.jsonl").write_bytes(
        (golden_dir / f"{COMPLETED}.jsonl").read_bytes()
    )
    with read_only(home) as seen:
        proc = workbench("--home", str(seen), cwd=tmp_path)
        assert proc.returncode == 2
        line = one_line(proc)
        assert "cannot be written" in line and "no store to read yet" in line


async def test_a_read_only_home_is_browsed_and_what_writes_is_refused(
    read_only_home: Path, wb_home: Path
) -> None:
    app = WorkbenchApp(read_only_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        notice = app.screen.query_one("#read-only-notice", Static)
        await settle(pilot, lambda: _runs(app).total == 4 and notice.display)
        shown = plain(notice)
        assert "read-only home: new traces are not picked up" in shown
        assert "cannot be written" in shown

        await pilot.press("g")  # reload: the fifth trace cannot be stored
        await settle(
            pilot, lambda: has_said(app, "cannot pick up new traces: the home is read-only")
        )
        assert _runs(app).total == 4
        await pilot.press("ctrl+f", *"Tokyo", "enter")  # contents search reads the store
        await settle(pilot, lambda: _runs(app).total == 1 and _runs(app).row(0) is not None)
        assert getattr(_runs(app).row(0), "run_id", None) == COMPLETED

        await writes_refused(pilot, COMPLETED, "the home is read-only")

        await pilot.press("v")  # verifying reads the recording and writes nothing
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        verdict = replay.query_one("#replay-verify", Static)
        await settle(pilot, lambda: "re-running" not in plain(verdict))
        expected = await replay_run(load_recording(COMPLETED, wb_home))
        assert f"verify replay: {expected.status}" in plain(verdict)
        assert [n.severity for n in notices(app)] == ["warning"] * 3

    assert_unchanged(wb_home)


def assert_unchanged(home: Path) -> None:
    """Nothing was exported and the trace not ingested is still not in the store."""
    assert {path.name for path in home.iterdir()} == {"traces", "workbench.duckdb"}
    with TraceStore.for_home(home, read_only=True) as store:
        assert store.count_runs() == 4


async def test_a_read_only_store_without_suite_results_shows_none(read_only_home: Path) -> None:
    app = WorkbenchApp(read_only_home)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot, lambda: _runs(app).total == 4)
        await pilot.press("R")
        await settle(pilot, lambda: isinstance(app.screen, RegressScreen))
        body = app.screen.query_one("#case-body", Static)
        await settle(pilot, lambda: "No suite runs stored yet" in plain(body))
        assert not said(app)


async def test_a_run_ingested_from_elsewhere_verifies_on_a_read_only_home(
    tmp_path: Path, golden_dir: Path
) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    trace = elsewhere / "kept-here.jsonl"
    trace.write_bytes((golden_dir / f"{COMPLETED}.jsonl").read_bytes())
    with TraceStore.for_home(home) as store:
        store.ingest([elsewhere])
    expected = await replay_run(load_recording(trace, home))
    with read_only(home) as seen:
        app = WorkbenchApp(seen)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await settle(pilot, lambda: _runs(app).total == 1)
            app.open_replay(COMPLETED, verify=True)
            await settle(pilot, lambda: isinstance(app.screen, ReplayScreen))
            verdict = app.screen.query_one("#replay-verify", Static)
            await settle(pilot, lambda: "re-running" not in plain(verdict))
            assert f"verify replay: {expected.status}" in plain(verdict)
            assert not said(app)


def test_a_damaged_store_is_one_line_before_the_terminal_is_taken(wb_home: Path) -> None:
    (wb_home / "workbench.duckdb").write_bytes(b"not a database" * 1000)
    proc = workbench("--home", str(wb_home), cwd=wb_home.parent)
    assert proc.returncode == 2
    assert "not a readable workbench database" in one_line(proc)
