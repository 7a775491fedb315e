"""A one-line dialog at the bottom of the screen: enter gives its text, escape gives None.
The review's note (`n`) and the run screen's suite for a captured case (`a`) ask with it."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class LineInput(ModalScreen[str | None]):
    """One line of text: enter gives it, escape leaves it."""

    DEFAULT_CSS = """
    LineInput { align: center bottom; }
    LineInput > Vertical {
        width: 90%; height: auto; border: round $accent; background: $panel; padding: 0 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss", "Cancel")]

    def __init__(
        self, title: str, *, input_id: str, placeholder: str = "", value: str = ""
    ) -> None:
        super().__init__()
        self.title_text = title
        self.input_id = input_id
        self.placeholder = placeholder
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text))
            yield Input(self.value, placeholder=self.placeholder, id=self.input_id)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)
