"""The runs list's lines: which columns fit the terminal's width, the header with its sort
arrow, and one line per store `RunRow`. Pure functions, as in `workbench.tui.render`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text

from traces.origins import JUDGED_LIKE, judged_status, kind_label
from traces.store import RunRow
from workbench.tui.render import fmt_count, fmt_ms, fmt_time, one_line, short_id, status_badge

if TYPE_CHECKING:
    from workbench.tui.backend import RunFilter


@dataclass(frozen=True)
class RunColumn:
    title: str
    width: int  # 0: the task column, which takes the room the others leave
    justify: str
    sort: str  # the store's column to sort by (traces.store.sql.RUN_SORT_COLUMNS)
    drop: int = 0  # when the terminal is narrow, columns with the highest drop go first


RUN_COLUMNS: tuple[RunColumn, ...] = (
    RunColumn("", 2, "left", ""),
    RunColumn("started (UTC)", 19, "left", "started_at", drop=3),
    RunColumn("run", 8, "left", "run_id"),
    RunColumn("kind", 8, "left", "origin", drop=1),
    RunColumn("task", 0, "left", "task"),
    RunColumn("model", 14, "left", "model", drop=4),
    RunColumn("status", 22, "left", "status"),
    # The key figures (drop 0) stay at any width, 80 columns included: the task then has
    # what is left (about 25 columns at 80).
    RunColumn("turns", 5, "right", "turns"),
    RunColumn("tools", 5, "right", "tool_calls"),
    RunColumn("tokens", 7, "right", "total_tokens"),
    RunColumn("time", 7, "right", "duration_ms", drop=5),
    RunColumn("parent", 12, "left", "parent_run_id", drop=6),
)
TASK_MIN_WIDTH = 30  # the task keeps this much before droppable columns give way
# A blank column after the last figure, so it never touches the scrollbar beside it.
RIGHT_MARGIN = 1


def visible_columns(width: int) -> list[RunColumn]:
    """The columns that fit `width`: the narrower the terminal, the more of the droppable
    columns go (parent first, then time, model, started…) so the task keeps its room."""
    shown = list(RUN_COLUMNS)
    for rank in sorted({c.drop for c in RUN_COLUMNS if c.drop}, reverse=True):
        fixed = sum(c.width for c in shown) + len(shown) - 1 + RIGHT_MARGIN
        if width - fixed >= TASK_MIN_WIDTH:
            break
        shown = [c for c in shown if c.drop != rank]
    return shown


def _layout(width: int) -> tuple[list[RunColumn], int]:
    """The columns shown at `width` and the task's width among them."""
    columns = visible_columns(width)
    fixed = sum(c.width for c in columns) + len(columns) - 1 + RIGHT_MARGIN
    return columns, max(8, width - fixed)


def _fit(cells: dict[str, Text], width: int) -> Text:
    columns, flex = _layout(width)
    # A figure is never cut: one wider than its column (a run of 100,000 turns) takes the
    # room from the task on its line, so the figures' right edges stay in line.
    sizes = {
        c.title: max(c.width, cells[c.title].cell_len) if c.justify == "right" else c.width
        for c in columns
    }
    flex = max(1, flex - sum(sizes[c.title] - c.width for c in columns))
    line = Text(no_wrap=True, overflow="ellipsis")
    for i, column in enumerate(columns):
        size = sizes[column.title] or flex
        cell = cells[column.title].copy()
        cell.truncate(size, overflow="ellipsis")
        pad = size - cell.cell_len
        if column.justify == "right":
            line.append(" " * pad)
            line.append_text(cell)
        else:
            line.append_text(cell)
            line.append(" " * pad)
        if i < len(columns) - 1:
            line.append(" ")
    line.truncate(width)
    return line


def runs_header(width: int, sort: str | None = None, descending: bool = True) -> Text:
    """The column titles; the sorted column carries ▼ (descending) or ▲."""
    cells = {}
    for column in RUN_COLUMNS:
        cells[column.title] = Text(column.title)
        if sort and column.sort == sort:
            arrow = "▼" if descending else "▲"
            room = column.width - 1 if column.width else len(column.title)
            cells[column.title] = Text(column.title[:room] + arrow)
            cells[column.title].stylize("reverse")
    header = _fit(cells, width)
    header.stylize("bold")
    return header


def header_column_at(x: int, width: int) -> RunColumn | None:
    """The column under character `x` of a runs line `width` wide (a header click)."""
    columns, flex = _layout(width)
    left = 0
    for column in columns:
        right = left + (column.width or flex)
        if left <= x < right + 1:
            return column
        left = right + 1
    return None


def run_row_line(row: RunRow, width: int, *, marked: bool = False) -> Text:
    """One runs-list line for a store `RunRow`."""
    parent = ""
    if row.parent_run_id:
        parent = f"{short_id(row.parent_run_id)}@{row.fork_turn or '?'}"
    origin = row.origin or "agent"
    cells = {
        "": Text("◆ " if marked else "  ", style="bold magenta"),
        "started (UTC)": Text(fmt_time(row.started_at), style="dim"),
        "run": Text(short_id(row.run_id), style="bold"),
        "kind": Text(kind_label(origin), style="dim" if origin == "agent" else "cyan"),
        "task": Text(one_line(row.task, 200)),
        "model": Text(row.model or ""),
        "status": _status(row),
        "turns": Text(str(row.turns or 0)),
        "tools": Text(f"{row.tool_calls or 0}", style="red" if row.tool_errors else ""),
        "tokens": Text(fmt_count(row.total_tokens)),
        "time": Text(fmt_ms(row.duration_ms)),
        "parent": Text(parent, style="cyan"),
    }
    return _fit(cells, width)


def _status(row: RunRow) -> Text:
    """A run's status; a regression sample's is what its case judged, in the colours of
    the run status it reads like (a sample that stops at max_turns by design passed)."""
    if not row.judged:
        return status_badge(row.status)
    badge = status_badge(JUDGED_LIKE.get(row.judged, "error"))
    return Text(f"{badge.plain[:2]}{judged_status(row.judged)}", style=badge.style)


def filters_named(where: RunFilter, search_text: str = "") -> list[str]:
    """Each filter the list applies, in words: what its count is a count of."""
    named = []
    if where.run_ids is not None:
        named.append(f"containing '{search_text}'")
    if where.failed_only:
        named.append("failed only")
    if where.status:
        named.append(f"status: {where.status}")
    if where.kind:
        named.append(f"kind: {where.kind}")
    if where.text:
        named.append(f"task or id: '{where.text}'")
    if where.signature:
        named.append(f"failure group {where.signature}")
    return named


def count_line(
    total: int, where: RunFilter, search_text: str, folded: int, marked: list[str]
) -> Text:
    """The runs list's count, naming every filter it is a count under (a search with
    "failed only" on says so), the samples folded away and the marked runs."""
    parts = [f"{total:,} run{'s' if total != 1 else ''}"]
    named = filters_named(where, search_text)
    if named and named[0].startswith("containing"):
        parts[0] += f" {named.pop(0)}"
    parts += named
    if folded:
        parts.append(f"{folded:,} suite samples folded (kind: sample lists them)")
    if marked:
        parts.append(f"marked {', '.join(short_id(r) for r in marked)}")
    return Text(" · ".join(parts))
