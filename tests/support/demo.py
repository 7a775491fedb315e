"""The runs `workbench demo` records, as tests use them: made once per module, copied per
test, and found by their scenario's name."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

from traces.home import traces_dir
from workbench.cli import main
from workbench.engine.recording.runs.load import read_recording_file


def record_demo(home: Path) -> Path:
    """`workbench demo --no-tui` into `home` (its printout kept out of the test's)."""
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["--home", str(home), "demo", "--no-tui"]) == 0
    return home


def copied_home(demo_home: Path, copy: Path) -> Path:
    """A copy of a home, its store too (the regression suite's verdicts live only there),
    for one test to change."""
    shutil.copytree(demo_home, copy)
    return copy


def demo_runs(home: Path) -> dict[str, str]:
    """The demo's runs by scenario name."""
    found = {}
    for path in traces_dir(home).glob("*.jsonl"):
        start = read_recording_file(path).run_start
        if "demo" in start.meta:
            found[str(start.meta["demo"])] = start.run_id
    return found


def demo_run(home: Path, name: str) -> str:
    """The run of the demo's scenario `name`."""
    found = demo_runs(home).get(name)
    assert found is not None, f"no demo run {name}"
    return found
