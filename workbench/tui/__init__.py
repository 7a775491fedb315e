"""The Textual workbench: the only package that imports Textual.

`run_app(home)` opens it on a home folder; `WorkbenchApp` is the App for Pilot tests.
"""

from __future__ import annotations

from pathlib import Path

from workbench.tui.app import WorkbenchApp
from workbench.tui.backend import Backend, Endpoint

__all__ = ["Endpoint", "WorkbenchApp", "run_app"]


def run_app(home: Path, endpoint: Endpoint | None = None) -> int:
    """Open the app on an existing home. The store is opened first, so a store that cannot
    be opened at all is a `StoreError` before the terminal is taken over."""
    backend = Backend(home)
    backend.open()
    WorkbenchApp(home, backend=backend, endpoint=endpoint).run()
    return 0
