"""The runs list's own widgets: the column titles that sort, and a filter's dropdown."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.events import Click
from textual.message import Message
from textual.widgets import Select, Static

from workbench.tui.run_rows import header_column_at, runs_header


class RunsHeader(Static):
    """Column titles; click one to sort by it, click again to reverse."""

    class SortBy(Message):
        def __init__(self, column: str) -> None:
            super().__init__()
            self.column = column

    sort: str | None = None
    descending = True

    def render(self) -> Text:
        return runs_header(self.size.width, self.sort, self.descending)

    def on_click(self, event: Click) -> None:
        column = header_column_at(event.x, self.size.width)
        if column is not None and column.sort:
            self.post_message(self.SortBy(column.sort))


class FilterSelect(Select[str], inherit_bindings=False):
    """A filter's dropdown: enter or space opens it; the arrows change it only while it is
    open. On a closed one they move the runs list (the screen's up and down), so a filter
    never changes because the focus happened to be on it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,space", "show_overlay", "Show menu", show=False),
    ]

    class Closed(Message):
        """The menu closed (a choice made, or escape): the list takes the keys back."""

        def __init__(self, select: FilterSelect) -> None:
            super().__init__()
            self.select = select

    def watch_expanded(self, expanded: bool) -> None:
        if not expanded:
            self.post_message(self.Closed(self))
