"""The Textual workbench: the only package that imports Textual.

`run_app(home)` opens it on a home folder; `WorkbenchApp` is the App for Pilot tests.
"""

from __future__ import annotations

from pathlib import Path

from workbench.tui.app import WorkbenchApp
from workbench.tui.backend import Endpoint

__all__ = ["Endpoint", "WorkbenchApp", "run_app"]


def run_app(home: Path, endpoint: Endpoint | None = None) -> int:
    home.mkdir(parents=True, exist_ok=True)
    WorkbenchApp(home, endpoint=endpoint).run()
    return 0
