"""What every workbench screen shares: a typed handle on the App and one error handler."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker, WorkerState

if TYPE_CHECKING:
    from workbench.tui.app import WorkbenchApp
    from workbench.tui.backend import Backend

PaletteCommand = tuple[str, str, Callable[[], Any]]


class WorkbenchScreen(Screen[None]):
    # Help and quit come first, so a narrow footer never cuts them off.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("question_mark", "app.help", "Help", key_display="?"),
        Binding("q", "app.quit", "Quit"),
    ]

    @property
    def workbench(self) -> WorkbenchApp:
        return self.app  # type: ignore[return-value]

    @property
    def backend(self) -> Backend:
        return self.workbench.backend

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Workers only post results; a failed one becomes a notification here."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.workbench.report_error(event.worker.error)
            self.worker_failed(event.worker)

    def worker_failed(self, worker: Worker[Any]) -> None:
        """Hook for screens that show a loading state they must clear."""

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield from ()
