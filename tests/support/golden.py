"""The golden traces of schema v1 (tests/fixtures/traces/v1, never edited), and a traces
folder that holds a copy of them, for the tests that read them as a home's runs."""

from __future__ import annotations

import shutil
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "v1"


def golden_traces_in(folder: Path) -> Path:
    """`folder` (made if missing) with a copy of every v1 golden trace."""
    folder.mkdir(parents=True, exist_ok=True)
    for trace in GOLDEN.glob("*.jsonl"):
        shutil.copy(trace, folder / trace.name)
    return folder
