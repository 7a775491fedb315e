"""What every workbench screen shares: a typed handle on what the App gives screens (the
`Workbench` protocol; the App itself is never imported here) and one error handler.

Screens read the backend and the shared settings through `self.workbench`, and ask to go
elsewhere by posting `workbench.tui.navigation` messages, which the App handles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from workbench.tui.backend import Backend, Endpoint

if TYPE_CHECKING:
    from workbench.tui.fork_draft import ForkDraft

PaletteCommand = tuple[str, str, Callable[[], Any]]


class Workbench(Protocol):
    """What screens use of the App: the store door, settings shared between screens, and
    the App's ways to report and copy."""

    backend: Backend
    endpoint: Endpoint  # the model forks talk to by default
    fork_endpoint: Endpoint | None  # the last model a fork dialog chose
    fork_drafts: dict[str, ForkDraft]  # each run's fork dialog changes, kept between visits
    case_suite: Path | None  # the suite the last captured case went to (the next default)
    ingest_on_start: bool
    watch_traces: bool

    def report_error(self, exc: BaseException) -> None: ...

    def copy(self, text: str, what: str) -> None: ...


class WorkbenchWidget(Widget):
    """A screen or widget that reads the store: the App's backend, and its failed workers
    shown (a worker's state change goes to the node that ran it, not up to its screen).

    A widget lists it after its own Textual base (`class Pane(VerticalScroll,
    WorkbenchWidget)`): Textual takes a widget's default CSS from its first base only."""

    @property
    def workbench(self) -> Workbench:
        return cast("Workbench", self.app)

    @property
    def backend(self) -> Backend:
        return self.workbench.backend

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Workers only post results; a failed one becomes a notification here."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.workbench.report_error(event.worker.error)
            self.worker_failed(event.worker)

    def worker_failed(self, worker: Worker[Any]) -> None:
        """Hook for screens that show a loading state they must clear."""


class WorkbenchScreen(Screen[None], WorkbenchWidget):
    # Help and quit come first, so a narrow footer never cuts them off.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("question_mark", "app.help", "Help", key_display="?"),
        Binding("q", "app.quit", "Quit"),
    ]

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield from ()
