"""The Textual workbench: the only package that imports Textual.

`run_app(home)` opens it on a home folder; `WorkbenchApp` is the App for Pilot tests. Textual
loads with the App, not with the package: `workbench.tui.backend` and the plain-Python view
modules import without it.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.tui.backend import Backend, Endpoint

if TYPE_CHECKING:
    from workbench.engine.review.queue import QueueSpec
    from workbench.tui.app import WorkbenchApp

__all__ = ["Endpoint", "WorkbenchApp", "run_app"]


def __getattr__(name: str) -> Any:
    if name == "WorkbenchApp":
        from workbench.tui.app import WorkbenchApp

        return WorkbenchApp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_app(
    home: Path,
    endpoint: Endpoint | None = None,
    review: QueueSpec | None = None,
    author: str | None = None,
    writes_off: str | None = None,
) -> int:
    """Open the app on an existing home (on the review queue `review`, its notes by
    `author`, when given). The store is opened first, so a store that cannot be read at
    all (damaged; read-only with none yet) is a `StoreError` before the terminal is taken
    over; one another process holds for now is tried again by each call. With `writes_off`
    (why), forks and exports are refused."""
    from traces.store import StoreLockedError
    from workbench.tui.app import WorkbenchApp

    backend = Backend(home, writes_off=writes_off)
    with suppress(StoreLockedError):
        backend.open()
    WorkbenchApp(home, backend=backend, endpoint=endpoint, review=review, author=author).run()
    return 0
