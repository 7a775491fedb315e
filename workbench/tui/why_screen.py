"""Why: a failed run's candidate causes, each verified by forks (`workbench why`), from the
run screen's `w`.

The engine finds and verifies the causes (`workbench.engine.analysis.why`) in a worker; this
screen shows each fork as it starts, then the ranked report. The forks are runs of their
own: `o` opens the first fork of the top cause.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Header, Static

from workbench.engine.analysis.why_text import report_lines
from workbench.tui.navigation import OpenRun
from workbench.tui.render import short_id
from workbench.tui.screens import WorkbenchScreen

if TYPE_CHECKING:
    from workbench.engine.analysis.why import WhyReport


class WhyScreen(WorkbenchScreen):
    """Why a run failed: ranked causes with their evidence and what their forks showed."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("o", "open_fork", "Open fork")]

    class Progress(Message):
        def __init__(self, line: str) -> None:
            super().__init__()
            self.line = line

    class Explained(Message):
        def __init__(self, report: WhyReport) -> None:
            super().__init__()
            self.report = report

    def __init__(self, run_id: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.report: WhyReport | None = None
        self._progress: list[str] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(
            Text.assemble(("why ", "dim"), (short_id(self.run_id), "bold")), classes="summary"
        )
        with VerticalScroll(id="why-body"):
            yield Static(Text("reading the candidates…", style="dim"), id="why")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"why {short_id(self.run_id)}"
        self.query_one("#why-body").focus()
        self._explain()

    @work(thread=True, exclusive=True, group="why", exit_on_error=False)
    def _explain(self) -> None:
        report = self.backend.why(
            self.run_id,
            self.workbench.endpoint,
            lambda line: self.post_message(self.Progress(line)),
        )
        self.post_message(self.Explained(report))

    def on_why_screen_progress(self, message: Progress) -> None:
        if self.report is None:
            self._progress.append(message.line)
            self.query_one("#why", Static).update(
                Text("\n".join(["verifying the candidates…", *self._progress]), style="dim")
            )

    def on_why_screen_explained(self, message: Explained) -> None:
        self.report = message.report
        self.query_one("#why", Static).update(Text("\n".join(report_lines(message.report))))

    def worker_failed(self, worker: Any) -> None:
        self.query_one("#why", Static).update(Text("could not explain the run", style="red"))

    def action_open_fork(self) -> None:
        forks = (
            [f for cause in self.report.causes for f in cause.verification.forks]
            if (self.report is not None)
            else []
        )
        if forks:
            self.post_message(OpenRun(forks[0]))
