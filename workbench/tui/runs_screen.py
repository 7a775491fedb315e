"""Runs screen: every recorded run, newest first, filtered in DuckDB and paged on scroll.

The list follows the traces folder: a new or growing trace file wakes a watcher thread,
which asks for an ingest, and the list recounts. On a home that cannot be written the store
is shown as it is, with a line saying so, and nothing is followed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import replace
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Checkbox, Footer, Header, Input, Select, Static

from traces.events import RUN_STATUSES
from traces.origins import kind_label
from traces.store import IngestReport, RunRow
from workbench.engine.views.first_steps import no_runs_yet
from workbench.engine.views.search import SEARCHED, SearchHit
from workbench.tui.backend import AGENT_AND_FORK, KIND_FILTERS, NotAvailable, RunFilter
from workbench.tui.navigation import (
    OpenCompare,
    OpenOverview,
    OpenRegressions,
    OpenReview,
    OpenRun,
    OpenRunGroup,
    OpenSchemaDiff,
    open_session_of,
)
from workbench.tui.paged_list import PagedList
from workbench.tui.render import plural, short_id
from workbench.tui.run_rows import (
    RUN_COLUMNS,
    count_line,
    filters_named,
    run_row_line,
    visible_columns,
)
from workbench.tui.screens import PaletteCommand, WorkbenchScreen
from workbench.tui.widgets.runs_list import FilterSelect, RunsHeader

INGEST_DELAY_S = 0.5
# The newest failed run (`e`) is one the user ran, not a regression sample or MCP session.
FAILED_RUN_KIND = AGENT_AND_FORK


class RunsScreen(WorkbenchScreen):
    """Runs: every recorded run, newest first. Filter, search, sort, open, or compare two."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_filter", "Filter", key_display="/"),
        Binding("ctrl+f", "focus_search", "Search contents", priority=True),
        Binding("f", "toggle_failed", "Failed only"),
        # Early in the list, so a narrow footer still shows it.
        Binding("o", "overview", "Overview"),
        Binding("s", "sort_next", "Sort"),
        Binding("S", "sort_reverse", "Reverse sort", show=False),
        Binding("space", "mark", "Mark"),
        Binding("c", "compare", "Compare marked"),
        Binding("C", "compare_task", "Runs of this task"),
        Binding("d", "schema_diff", "Schema diff"),
        Binding("e", "first_failed", "First failure"),
        Binding("y", "copy_id", "Copy id"),
        Binding("R", "regressions", "Regressions"),
        Binding("Q", "review", "Review queue"),
        Binding("W", "session", "Session", show=False),
        Binding("g", "reload", "Reload", show=False),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        # Reached from the filters only (the list binds its own arrows): back to the list.
        Binding("down", "list_cursor(1)", "Down", show=False),
        Binding("up", "list_cursor(-1)", "Up", show=False),
    ]

    class Counted(Message):
        def __init__(self, total: int, folded: int, stored_changes: int) -> None:
            super().__init__()
            self.total = total
            self.folded = folded  # regression samples the list folds away
            self.stored_changes = stored_changes  # the backend's, when the count began

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, type(self))  # only the newest count matters

    class Ingested(Message):
        def __init__(self, report: IngestReport) -> None:
            super().__init__()
            self.report = report

    class IngestProgress(Message):
        def __init__(self, what: str, done: float) -> None:
            super().__init__()
            self.what, self.done = what, done

    class TracesChanged(Message):
        """The watcher saw trace files appear or grow."""

    class Searched(Message):
        def __init__(self, text: str, hits: list[SearchHit]) -> None:
            super().__init__()
            self.text = text
            self.hits = hits

    class FirstFailed(Message):
        def __init__(self, run_id: str | None) -> None:
            super().__init__()
            self.run_id = run_id

    def __init__(self) -> None:
        super().__init__()
        self.where = RunFilter()
        self.marked: list[str] = []
        self.search_text = ""
        self.ingests = 0  # ingests finished: what tests wait on
        self._stop_watching = threading.Event()
        self._keep_position = False  # the next recount keeps the cursor (new runs arrived)
        self._following = False  # the traces folder is watched (once the store is open)
        self._counted_changes = -1  # the backend's stored_changes the list was counted at
        self._folded = 0  # regression samples the list folds under their suite runs

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="run-filters"):
            yield Input(placeholder="filter by task or run id…  (/)", id="filter-text")
            yield Input(placeholder="search contents…  (ctrl+f)", id="search-text")
        with Horizontal(id="run-choices"):
            options = [(status, status) for status in RUN_STATUSES]
            yield FilterSelect(options, prompt="any status", id="filter-status")
            kinds = [(_kind_prompt(k), k) for k in KIND_FILTERS]
            yield FilterSelect(kinds, prompt="any kind", id="filter-kind")
            yield Checkbox("failed only (f)", id="filter-failed")
        # A line of its own: beside the filters it fell off an 80-column screen.
        yield Static("loading…", id="runs-count")
        yield Static(id="read-only-notice")
        yield RunsHeader(id="runs-header")
        yield Static(id="runs-empty")
        yield PagedList(self._fetch, self._render_row, id="runs-list")
        yield Footer()

    @property
    def runs_list(self) -> PagedList[RunRow]:
        return self.query_one("#runs-list", PagedList)

    def on_mount(self) -> None:
        self.runs_list.focus()
        # Show what the store already has at once; new traces are picked up once the first
        # rows are on screen (ingest competes with rendering for the interpreter).
        self._ingest_pending = self.workbench.ingest_on_start
        self._count()

    def on_unmount(self) -> None:
        self._stop_watching.set()

    # ------------------------------------------------------------------ data

    def _fetch(self, offset: int, limit: int) -> list[RunRow]:
        return self.backend.runs(self.where, offset, limit)

    def _render_row(self, row: RunRow, index: int, width: int) -> Text:
        return run_row_line(row, width, marked=row.run_id in self.marked)

    @work(thread=True, exclusive=True, group="count", exit_on_error=False)
    def _count(self) -> None:
        changes = self.backend.stored_changes
        self.post_message(self.Counted(*self.backend.count_runs(self.where), changes))

    @work(thread=True, exclusive=True, group="ingest", exit_on_error=False)
    def _ingest(self) -> None:
        shown_from = time.monotonic() + 1.0  # only a long load shows, a store rebuild say

        def progress(what: str, done: float) -> None:
            if time.monotonic() >= shown_from:
                self.post_message(self.IngestProgress(what, done))

        self.post_message(self.Ingested(self.backend.ingest(progress)))

    def on_runs_screen_ingest_progress(self, message: IngestProgress) -> None:
        self.query_one("#runs-count", Static).update(f"{message.what}… {message.done:.0%}")

    def _watch(self) -> None:
        """Follow the traces folder in a daemon thread for as long as the screen lives (a
        worker would make every wait for the workers wait for it)."""

        app, report = self.app, self.workbench.report_error

        def watch() -> None:
            try:
                self.backend.watch_traces(
                    self._stop_watching, lambda: self.post_message(self.TracesChanged())
                )
            except Exception as exc:  # no watching is a lost convenience, not a crash
                if not self._stop_watching.is_set():
                    with suppress(RuntimeError):  # the app may be closing meanwhile
                        app.call_from_thread(report, exc)

        threading.Thread(target=watch, name="watch-traces", daemon=True).start()

    def on_runs_screen_traces_changed(self) -> None:
        self._ingest()

    def _follow(self) -> None:
        """Once the store is open: watch the traces folder, or, when the home cannot be
        written, say in one line that new traces are not picked up."""
        if self._following:
            return
        self._following = True
        reason = self.backend.read_only
        notice = self.query_one("#read-only-notice", Static)
        if reason is not None:
            self._ingest_pending = False
            notice.update(
                Text(
                    f"read-only home: new traces are not picked up, fork and export are off "
                    f"({reason})",
                    style="bold yellow",
                )
            )
            notice.display = True
            return
        if self.backend.writes_off is not None:
            notice.update(Text(f"read-only: {self.backend.writes_off}", style="bold yellow"))
            notice.display = True
        if self.workbench.watch_traces:
            self._watch()

    def on_screen_resume(self) -> None:
        if self._counted_changes != -1:  # not the first showing: on_mount counts that
            self._recount_if_stale()  # a fork made meanwhile is listed at once

    def _recount_if_stale(self) -> bool:
        """Recount, keeping the cursor, when the store gained runs since the last count
        (a fork ingests its run itself, so no later ingest reports it as new)."""
        if self._counted_changes == self.backend.stored_changes:
            return False
        self._keep_position = True
        self._count()
        return True

    def on_runs_screen_counted(self, message: Counted) -> None:
        self._counted_changes = message.stored_changes
        self._folded = message.folded
        self._follow()
        runs, keep = self.runs_list, self._keep_position
        runs.reset(message.total, cursor=runs.cursor if keep else 0, keep_scroll=keep)
        self._keep_position = False
        self._show_count()
        self._say_if_empty(message.total == 0 and not message.folded)
        if message.total == 0:
            self._start_ingest()

    def _say_if_empty(self, empty: bool) -> None:
        """An empty home (not an empty filter) says how to get runs."""
        box = self.query_one("#runs-empty", Static)
        box.display = empty and self.where == RunFilter()
        if box.display:
            follow = "they appear here on their own" if self.workbench.watch_traces else "g reloads"
            said = f"{no_runs_yet(str(self.backend.home))}\n\nRun one, and {follow}."
            box.update(Text(said))

    @on(PagedList.Highlighted, "#runs-list")
    def _first_rows_shown(self, event: PagedList.Highlighted) -> None:
        if event.row is not None and self._ingest_pending:
            # Scanning a big traces folder holds the interpreter for a moment; let the first
            # rows paint and settle before it starts.
            self.set_timer(INGEST_DELAY_S, self._start_ingest)

    def _start_ingest(self) -> None:
        if self._ingest_pending:
            self._ingest_pending = False
            self._ingest()

    def _show_count(self) -> None:
        shown = count_line(
            self.runs_list.total, self.where, self.search_text, self._folded, self.marked
        )
        self.query_one("#runs-count", Static).update(shown)

    def on_runs_screen_ingested(self, message: Ingested) -> None:
        self.ingests += 1
        report = message.report
        if not self._recount_if_stale():  # new runs keep the cursor where the user is
            self._show_count()  # in place of the progress, if any was shown
        if report.problems:
            self.notify(
                f"{len(report.problems)} bad trace line(s) skipped; first: {report.problems[0]}",
                severity="warning",
            )

    def worker_failed(self, worker: Any) -> None:
        self.query_one("#runs-count", Static).update("could not load runs")
        if worker.group == "count" and self.backend.read_only is None:
            self._follow()  # a store busy for now: new traces still show once it is free

    def _apply(self, **changes: Any) -> None:
        self.where = RunFilter(**{**self.where.__dict__, **changes})
        header = self.query_one("#runs-header", RunsHeader)
        header.sort, header.descending = self.where.sort, self.where.descending
        header.refresh()
        self._count()

    # ------------------------------------------------------------------ filters

    @on(Input.Changed, "#filter-text")
    def _text_changed(self, event: Input.Changed) -> None:
        self._apply(text=event.value.strip())

    @on(Input.Submitted, "#filter-text")
    def _text_submitted(self) -> None:
        self.runs_list.focus()

    @on(Input.Submitted, "#search-text")
    def _search_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            self.search_text = ""
            self._apply(run_ids=None)
        else:
            self.query_one("#runs-count", Static).update(Text(f"searching for '{text}'…"))
            self._search(text)
        self.runs_list.focus()

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _search(self, text: str) -> None:
        self.post_message(self.Searched(text, self.backend.search(text)))

    def on_runs_screen_searched(self, message: Searched) -> None:
        self.search_text = message.text
        found = tuple(dict.fromkeys(hit.run_id for hit in message.hits))
        others = filters_named(replace(self.where, run_ids=None))  # besides the search
        self._apply(run_ids=found)
        if not found:
            self.notify(f"No run contains '{message.text}' ({SEARCHED}).")
        elif others:
            self.notify(
                f"'{message.text}' is in {plural(len(found), 'run')}; listed under the "
                f"filters on: {', '.join(others)}."
            )

    @on(Select.Changed, "#filter-status")
    def _status_changed(self, event: Select.Changed) -> None:
        value = event.value
        self._apply(status=value if isinstance(value, str) else None)
        self._back_to_list(event.select)

    @on(Select.Changed, "#filter-kind")
    def _kind_changed(self, event: Select.Changed) -> None:
        value = event.value
        self._apply(kind=value if isinstance(value, str) else None)
        self._back_to_list(event.select)

    @on(Checkbox.Changed, "#filter-failed")
    def _failed_changed(self, event: Checkbox.Changed) -> None:
        self._apply(failed_only=event.value)
        self._back_to_list(event.checkbox)

    @on(FilterSelect.Closed)
    def _menu_closed(self, message: FilterSelect.Closed) -> None:
        self._back_to_list(message.select)

    def _back_to_list(self, control: Widget) -> None:
        """A filter that was just used hands the keys back to the list (a change made
        while the list has the focus, `f` say, leaves the focus where it is)."""
        if self.focused is control:
            self.runs_list.focus()

    def action_list_cursor(self, step: int) -> None:
        self.runs_list.focus()
        self.runs_list.action_cursor(step)

    def action_focus_filter(self) -> None:
        self.query_one("#filter-text", Input).focus()

    def action_focus_search(self) -> None:
        self.query_one("#search-text", Input).focus()

    def action_clear_filter(self) -> None:
        if not isinstance(self.focused, Input | PagedList):
            self.runs_list.focus()  # escape on a dropdown or the checkbox only leaves it
            return
        for box_id in ("#filter-text", "#search-text"):
            box = self.query_one(box_id, Input)
            if box.value:
                box.value = ""
        if self.where.run_ids is not None:
            self.search_text = ""
            self._apply(run_ids=None)
        if self.where.signature is not None:
            self._apply(signature=None)
        self.runs_list.focus()

    def filter_failure_group(self, signature: str) -> None:
        """List only the runs of one failure group (escape lists them all again)."""
        self._apply(signature=signature)
        self.runs_list.focus()

    def action_toggle_failed(self) -> None:
        box = self.query_one("#filter-failed", Checkbox)
        box.value = not box.value

    def action_reload(self) -> None:
        try:
            self.backend.check_writable("pick up new traces")
        except NotAvailable as exc:
            self.workbench.report_error(exc)
            return
        self._ingest()

    # ------------------------------------------------------------------ sorting

    @on(RunsHeader.SortBy)
    def _sort_by(self, message: RunsHeader.SortBy) -> None:
        if self.where.sort == message.column:
            self._apply(descending=not self.where.descending)
        else:
            self._apply(sort=message.column, descending=True)

    def action_sort_next(self) -> None:
        """Sort by the next column shown (newest first again after the last)."""
        width = self.runs_list.scrollable_content_region.width or 120
        columns = [c.sort for c in visible_columns(width) if c.sort]
        current = self.where.sort or "started_at"
        following = (
            columns[(columns.index(current) + 1) % len(columns)]
            if current in columns
            else columns[0]
        )
        self._apply(sort=None if following == "started_at" else following, descending=True)
        self.notify(f"Sorted by {_column_title(following)}.", timeout=2)

    def action_sort_reverse(self) -> None:
        self._apply(sort=self.where.sort or "started_at", descending=not self.where.descending)

    # ------------------------------------------------------------------ runs

    def _current(self) -> RunRow | None:
        return self.runs_list.row(self.runs_list.cursor)

    @on(PagedList.Selected, "#runs-list")
    def _open(self, event: PagedList.Selected) -> None:
        if event.row is not None:
            self.post_message(OpenRun(event.row.run_id))

    def action_mark(self) -> None:
        row = self._current()
        if row is None:
            return
        if row.run_id in self.marked:
            self.marked.remove(row.run_id)
        else:
            self.marked = [*self.marked[-1:], row.run_id]
        self.runs_list.refresh_rows()
        self._show_count()

    def action_copy_id(self) -> None:
        row = self._current()
        if row is not None:
            self.workbench.copy(row.run_id, f"run id {short_id(row.run_id)}")

    def _pair(self) -> tuple[str, str] | None:
        if len(self.marked) == 2:
            return self.marked[0], self.marked[1]
        row = self._current()
        if len(self.marked) == 1 and row is not None and row.run_id != self.marked[0]:
            return self.marked[0], row.run_id
        if row is not None and row.parent_run_id:
            return row.parent_run_id, row.run_id  # a fork compares with its parent
        self.notify("Mark two runs with space first (a fork compares with its parent).")
        return None

    def action_compare(self) -> None:
        pair = self._pair()
        if pair:
            self.post_message(OpenCompare(*pair))

    def action_compare_task(self) -> None:
        row = self._current()
        if row is not None:
            self.post_message(OpenRunGroup(task_of=row.run_id))

    def action_schema_diff(self) -> None:
        pair = self._pair()
        if pair:
            self.post_message(OpenSchemaDiff(*pair))

    def action_first_failed(self) -> None:
        self._find_first_failed()

    def action_regressions(self) -> None:
        self.post_message(OpenRegressions())

    def action_overview(self) -> None:
        self.post_message(OpenOverview())

    def action_review(self) -> None:
        """Review the runs the list shows, one at a time (the queue is named by the
        filters, and resumes by that name)."""
        named = filters_named(self.where, self.search_text)
        self.post_message(OpenReview(self.where.query(), f"runs list: {', '.join(named) or 'all'}"))

    def action_session(self) -> None:
        row = self._current()
        if row is not None:
            open_session_of(self, row.session)

    @work(thread=True, exclusive=True, group="find", exit_on_error=False)
    def _find_first_failed(self) -> None:
        found = self.backend.runs(RunFilter(failed_only=True, kind=FAILED_RUN_KIND), 0, 1)
        self.post_message(self.FirstFailed(found[0].run_id if found else None))

    def on_runs_screen_first_failed(self, message: FirstFailed) -> None:
        if message.run_id is None:
            self.notify("No failed runs.")
        else:
            self.post_message(OpenRun(message.run_id, jump_to_error=True))

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield ("Open the newest failed run", "Jump to its first error", self.action_first_failed)
        yield (
            "Toggle failed only",
            "Show only runs that did not complete",
            self.action_toggle_failed,
        )
        yield (
            "Search run contents",
            "Tasks, messages, tool names, arguments and results, errors",
            self.action_focus_search,
        )
        yield ("Sort by the next column", "Then reverse with S", self.action_sort_next)
        yield ("Compare marked runs", "Decision chains side by side", self.action_compare)
        yield (
            "Compare the runs of this task",
            "Where each run left the passing runs' path",
            self.action_compare_task,
        )
        yield ("Schema diff of marked runs", "Tool schemas side by side", self.action_schema_diff)
        yield ("Copy the run id", "To the clipboard", self.action_copy_id)
        yield ("Regression results", "Suites, pass rates, what changed", self.action_regressions)
        yield ("Review the runs listed", "One key labels a run and moves on", self.action_review)
        yield (
            "Overview",
            "Runs, failures, tokens, cost and latency by day and by model",
            self.action_overview,
        )
        yield ("Reload runs", "Ingest new traces from the home folder", self.action_reload)


def _column_title(sort: str) -> str:
    return next((c.title for c in RUN_COLUMNS if c.sort == sort), sort)


def _kind_prompt(kind: str) -> str:
    """A kind filter's choice: the origin, and the label the kind column shows for it."""
    label = kind_label(kind)
    return kind if label == kind else f"{kind} ({label})"
