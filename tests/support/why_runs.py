"""Runs of one task whose cause of failure is known, for `workbench why`: the agent reads
`units.txt` with a scripted model that answers by what the tool said. Where the file is
there the run completes; where it is gone, read_file's error makes the model ask again and
the run ends `duplicate_tool_calls`. So mocking the failed call's result with the passing
run's flips the outcome (the cause), while the decoy, read_file's description the failing
run was offered unlike the passing run, changes nothing."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

from workbench.cli import main

UNITS = "units: 3 (alpha, beta, gamma)"
TASK = "how many units are there?"
DECOY = "Read a text file (version 2)."
# Answers by the tool's result, as a model would: the count once read, else the same call.
SCRIPT = {
    "name": "reader",
    "steps": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "units.txt"}}]},
        {"when_last_tool_result_contains": "units:", "content": "{last_tool_result}"},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "units.txt"}}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "units.txt"}}]},
    ],
}


@dataclass(frozen=True)
class WhyHome:
    home: Path
    script: Path
    passing: str
    failing: str


def _run(home: Path, root: Path, script: Path, *more: str) -> str:
    before = set(home.glob("traces/*.jsonl"))
    argv = ["run", TASK, "--script", str(script), "--root", str(root)]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["--home", str(home), *argv, "--builtin-tools", "read_file,list_dir", *more])
    (made,) = set(home.glob("traces/*.jsonl")) - before
    return made.stem


def why_home(base: Path, *, decoy: bool = True) -> WhyHome:
    """A passing run (the file there), then a failing one (the file gone; with `decoy`,
    offered another description of read_file too)."""
    home, good, bad = base / "home", base / "good", base / "bad"
    for folder in (home, good, bad):
        folder.mkdir(parents=True)
    (good / "units.txt").write_text(UNITS + "\n")
    script = base / "reader.json"
    script.write_text(json.dumps(SCRIPT))
    passing = _run(home, good, script)
    extra = ["--tool-description", f"read_file={DECOY}"] if decoy else []
    failing = _run(home, bad, script, *extra)
    return WhyHome(home, script, passing, failing)
