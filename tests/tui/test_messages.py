"""High-rate TUI messages are replaceable: when several wait in a queue, only the newest is
handled (scrolling a long list posts one highlight per row)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from workbench.tui.paged_list import PagedList
from workbench.tui.runs_screen import RunsScreen
from workbench.tui.widgets.run_detail import RunDetail


def _list() -> PagedList[Any]:
    return PagedList(lambda offset, limit: [], lambda row, index, width: Text(str(row)))


def test_a_newer_highlight_of_the_same_list_replaces_a_waiting_one() -> None:
    rows, other = _list(), _list()
    first = PagedList.Highlighted(rows, 1, None)
    assert first.can_replace(PagedList.Highlighted(rows, 2, None))
    assert not first.can_replace(PagedList.Highlighted(other, 2, None))
    # Opening a row is an action: never dropped, never dropping a highlight for it.
    assert not first.can_replace(PagedList.Selected(rows, 2, None))
    assert not PagedList.Selected(rows, 1, None).can_replace(PagedList.Selected(rows, 2, None))


def test_counts_and_details_keep_only_the_newest() -> None:
    assert RunsScreen.Counted(3, 0, 0).can_replace(RunsScreen.Counted(4, 0, 0))
    assert RunDetail.Ready(Text("a")).can_replace(RunDetail.Ready(Text("b")))
    assert not RunDetail.Ready(Text("a")).can_replace(RunsScreen.Counted(1, 0, 0))
