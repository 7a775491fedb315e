"""`?` — what the screen underneath is for and every key it answers to."""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

JOURNEY = (
    "Runs → Enter opens a run → e jumps to its first error → r steps through it → "
    "f forks the selected turn with a fix → the fork opens beside its parent."
)


def help_renderable(screen: Screen[object]) -> Group:
    purpose = (screen.__doc__ or type(screen).__name__).strip().splitlines()[0]
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    seen: set[str] = set()
    for key, active in screen.active_bindings.items():
        binding = active.binding
        # The footer's keys are the screen's own; movement keys are listed once below.
        if not binding.show or not binding.description or binding.description in seen:
            continue
        seen.add(binding.description)
        display = binding.key_display or screen.app.get_key_display(binding)
        table.add_row(display or key, binding.description)
    table.add_row("↑ ↓ pgup pgdn", "Move; home / end jump to the first / last")
    table.add_row("enter", "Open the selected row or tree node")
    table.add_row("tab", "Next pane or field")
    table.add_row("ctrl+p", "Command palette: every action by name")
    table.add_row("mouse", "Click to select, double-click to open, wheel to scroll")
    return Group(
        Text(purpose, style="bold"),
        Text(""),
        table,
        Text(""),
        Text(JOURNEY, style="dim"),
    )


class HelpScreen(ModalScreen[None]):
    """Help."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 80; height: auto; max-height: 80%;
        border: round $accent; background: $panel; padding: 1 2;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss", "Close"),
    ]

    def __init__(self, under: Screen[object]) -> None:
        super().__init__()
        self.under = under

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_renderable(self.under))

    def on_click(self) -> None:
        self.dismiss()
