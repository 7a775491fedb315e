"""Session: the runs of one conversation or agent session in the order they ran, with the
session's totals (`workbench show --session` in the terminal). Enter opens a run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Static

from workbench.engine.views.sessions import SessionView, session_summary
from workbench.tui.navigation import OpenRun
from workbench.tui.render import fmt_count, fmt_ms, one_line, short_id, status_badge
from workbench.tui.screens import PaletteCommand, WorkbenchScreen

COLUMNS = ("#", "run", "status", "turns", "tools", "tokens", "time", "started (UTC)", "task")


class SessionScreen(WorkbenchScreen):
    """A session's runs, first to last."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open_run", "Open run", show=True),
        Binding("y", "copy_session", "Copy session id"),
    ]

    class Loaded(Message):
        def __init__(self, view: SessionView) -> None:
            super().__init__()
            self.view = view

    def __init__(self, session: str) -> None:
        super().__init__()
        self.session = session
        self.view: SessionView | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(
            Text(f"session {self.session} · loading…"), classes="summary", id="session-summary"
        )
        table: DataTable[str | Text] = DataTable(id="session-runs", cursor_type="row")
        table.add_columns(*COLUMNS)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"session {self.session}"
        self.query_one(DataTable).focus()
        self._load()

    @work(thread=True, exclusive=True, group="session", exit_on_error=False)
    def _load(self) -> None:
        self.post_message(self.Loaded(self.backend.session(self.session)))

    def on_session_screen_loaded(self, message: Loaded) -> None:
        view = self.view = message.view
        self.session = view.session.session
        self.sub_title = f"session {self.session}"
        self.query_one("#session-summary", Static).update(
            Text.assemble(
                ("session ", "dim"), (self.session, "bold"), f"\n{session_summary(view.session)}"
            )
        )
        table = self.query_one(DataTable)
        table.clear()
        for number, run in enumerate(view.runs, 1):
            started = run.started_at.strftime("%Y-%m-%d %H:%M:%S") if run.started_at else "-"
            tools = f"{run.tool_calls}" + (
                f" ({run.tool_errors} failed)" if run.tool_errors else ""
            )
            table.add_row(
                str(number),
                short_id(run.run_id),
                status_badge(run.status),
                str(run.turns),
                tools,
                fmt_count(run.total_tokens),
                fmt_ms(run.duration_ms),
                started,
                one_line(run.task, 60),
                key=run.run_id,
            )

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.post_message(OpenRun(event.row_key.value))

    def action_open_run(self) -> None:
        table = self.query_one(DataTable)
        if self.view is not None and self.view.runs and table.cursor_row < len(self.view.runs):
            self.post_message(OpenRun(self.view.runs[table.cursor_row].run_id))

    def action_copy_session(self) -> None:
        self.workbench.copy(self.session, f"session id {self.session}")

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield ("Open the run", "Its decision chain (enter)", self.action_open_run)
        yield ("Copy the session id", "To the clipboard", self.action_copy_session)
