"""The fork dialog's live output: streamed text and one line per event, wrapped at words."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static


class ForkOutput(VerticalScroll):
    """Text that grows at its end and keeps its end in view."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = Text()

    def compose(self) -> ComposeResult:
        yield Static(self.text, id="fork-output-text")

    def clear(self) -> None:
        self.text = Text()
        self._refresh()

    def write(self, text: str, style: str = "") -> None:
        self.text.append(text, style=style)
        self._refresh()

    def write_line(self, text: str, style: str = "") -> None:
        if self.text.plain and not self.text.plain.endswith("\n"):
            self.text.append("\n")
        self.write(text + "\n", style)

    def _refresh(self) -> None:
        self.query_one("#fork-output-text", Static).update(self.text)
        self.scroll_end(animate=False)
