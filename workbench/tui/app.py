"""The workbench App: global bindings, the command palette, and the one error handler.

Screens do one task each (runs, one run, replay, diffs, fork); the App only routes between
them (screens post `workbench.tui.navigation` messages, handled here) and turns any failure
into a notification, so nothing a store or engine call raises can take the terminal down.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen

from workbench.tui import navigation
from workbench.tui.backend import Backend, Endpoint, NotAvailable
from workbench.tui.help import HelpScreen
from workbench.tui.runs_screen import RunsScreen

if TYPE_CHECKING:
    from workbench.engine.review.queue import QueueSpec
    from workbench.tui.fork_draft import ForkDraft
    from workbench.tui.screens import Workbench


def error_line(exc: BaseException) -> str:
    """One readable line for a notification: the message, never a traceback."""
    if isinstance(exc, NotAvailable):
        return str(exc)
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 240 else text[:239] + "…"


class Notice(NamedTuple):
    """A notification as the user sees it."""

    message: str
    severity: SeverityLevel


class WorkbenchApp(App[None]):
    TITLE = "agent workbench"
    CSS_PATH = "workbench.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]
    # Seconds in which a second ctrl+c (or q) quits after the warning about unsaved work.
    QUIT_CONFIRM_S = 4.0

    def __init__(
        self,
        home: Path,
        *,
        backend: Backend | None = None,
        endpoint: Endpoint | None = None,
        ingest: bool = True,
        watch: bool = True,
        review: QueueSpec | None = None,
        author: str | None = None,
    ) -> None:
        super().__init__()
        self.home = home
        self.backend = backend or Backend(home)
        # The model forks talk to by default: `workbench tui` flags, else the environment.
        self.endpoint = endpoint or Endpoint.from_env()
        self.ingest_on_start = ingest
        self.watch_traces = watch  # follow the traces folder: new runs appear on their own
        # Remembered between fork dialogs: each run's draft changes and the last model used.
        self.fork_drafts: dict[str, ForkDraft] = {}
        self.fork_endpoint: Endpoint | None = None
        self.case_suite: Path | None = None  # the suite the last captured case went to
        self._quit_armed = False
        # `workbench review`: the queue opened over the runs list, and who writes its notes.
        self.review_on_start = review
        self.author = author

    def on_mount(self) -> None:
        self.push_screen(RunsScreen())
        if self.review_on_start is not None:
            self.open_review(self.review_on_start)

    def on_unmount(self) -> None:
        self.backend.release()

    # ------------------------------------------------------------------ errors

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Show a notification as plain text, whatever the caller asks.

        Notifications quote trace text, search terms and error messages (`[/INST]`, a
        pydantic `[type=extra_forbidden…` cut mid-bracket), and Textual markup would read
        those as tags and take the app down; screens' `notify` always asks for markup.
        """
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def report_error(self, exc: BaseException) -> None:
        severity: SeverityLevel = "warning" if isinstance(exc, NotAvailable) else "error"
        self.notify(error_line(exc), severity=severity, timeout=8)

    @property
    def notifications(self) -> list[Notice]:
        """The notifications showing now, oldest first (what a user reads on the screen)."""
        return [Notice(n.message, n.severity) for n in self._notifications]

    # ------------------------------------------------------------------ actions

    async def action_quit(self) -> None:
        """Quit; when the screen holds work that would be lost, only on a second press."""
        unsaved = getattr(self.screen, "unsaved_work", None)
        reason = unsaved() if unsaved is not None else None
        if reason and not self._quit_armed:
            self._quit_armed = True
            self.set_timer(self.QUIT_CONFIRM_S, self._disarm_quit)
            self.notify(
                f"{reason}: press ctrl+c again to quit anyway, or escape to leave the form "
                "(it is remembered)",
                severity="warning",
            )
            return
        self.exit()

    def _disarm_quit(self) -> None:
        self._quit_armed = False

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def open_run(
        self,
        run_id: str,
        *,
        jump_to_error: bool = False,
        step: tuple[int | None, int | None] | None = None,
    ) -> None:
        from workbench.tui.run_screen import RunScreen

        self.push_screen(RunScreen(run_id, jump_to_error=jump_to_error, step=step))

    def open_run_group(self, *, task_of: str | None = None, run_ids: tuple[str, ...] = ()) -> None:
        from workbench.tui.group_screen import RunGroupScreen

        self.push_screen(RunGroupScreen(task_of=task_of, run_ids=run_ids))

    def open_replay(self, run_id: str, seq: int = 0, *, verify: bool = False) -> None:
        from workbench.tui.replay_screen import ReplayScreen

        self.push_screen(ReplayScreen(run_id, seq, verify=verify))

    def open_schema_diff(self, run_a: str, run_b: str) -> None:
        from workbench.tui.diff_screens import SchemaDiffScreen

        self.push_screen(SchemaDiffScreen(run_a, run_b))

    def open_compare(self, run_a: str, run_b: str) -> None:
        from workbench.tui.diff_screens import ChainCompareScreen

        self.push_screen(ChainCompareScreen(run_a, run_b))

    def open_regressions(self) -> None:
        from workbench.tui.regress_screen import RegressScreen

        self.push_screen(RegressScreen())

    def open_overview(self) -> None:
        from workbench.tui.overview_screen import OverviewScreen

        self.push_screen(OverviewScreen())

    def open_timeline(self, run_id: str, tokens: tuple[int, int] | None = None) -> None:
        from workbench.tui.timeline_screen import TimelineScreen

        self.push_screen(TimelineScreen(run_id, tokens))

    def open_session(self, session: str) -> None:
        from workbench.tui.session_screen import SessionScreen

        self.push_screen(SessionScreen(session))

    def copy(self, text: str, what: str) -> None:
        """Put `text` on the clipboard (the terminal's, through OSC 52) and say so."""
        self.copy_to_clipboard(text)
        self.notify(f"Copied {what} to the clipboard.", timeout=3)

    def open_review(self, spec: QueueSpec) -> None:
        from workbench.engine.review.labels import LabelsError, load_labels
        from workbench.tui.review_screen import ReviewScreen

        try:
            self.backend.check_writable("review runs")  # the notes go into the home
            labels = load_labels(self.home)
        except (NotAvailable, LabelsError) as exc:
            self.report_error(exc)
            return
        self.push_screen(ReviewScreen(spec, labels, self.author))

    def open_fork(self, run_id: str, turn: int, *, mock_call: str | None = None) -> None:
        from workbench.tui.fork_screen import ForkScreen

        try:
            self.backend.check_may_write("fork")  # the fork's trace goes into the home
        except NotAvailable as exc:
            self.report_error(exc)
            return
        self.push_screen(ForkScreen(run_id, turn, mock_call=mock_call))

    # ------------------------------------------------------------------ navigation

    def on_open_run(self, message: navigation.OpenRun) -> None:
        self.open_run(message.run_id, jump_to_error=message.jump_to_error, step=message.step)

    def on_open_run_group(self, message: navigation.OpenRunGroup) -> None:
        self.open_run_group(task_of=message.task_of, run_ids=message.run_ids)

    def on_open_replay(self, message: navigation.OpenReplay) -> None:
        self.open_replay(message.run_id, message.seq, verify=message.verify)

    def on_open_schema_diff(self, message: navigation.OpenSchemaDiff) -> None:
        self.open_schema_diff(message.run_a, message.run_b)

    def on_open_compare(self, message: navigation.OpenCompare) -> None:
        self.open_compare(message.run_a, message.run_b)

    def on_open_regressions(self, message: navigation.OpenRegressions) -> None:
        self.open_regressions()

    def on_open_overview(self, message: navigation.OpenOverview) -> None:
        self.open_overview()

    def on_open_failure_group(self, message: navigation.OpenFailureGroup) -> None:
        # The runs list is the bottom screen: back to it, filtered to the group.
        while len(self.screen_stack) > 2 and not isinstance(self.screen, RunsScreen):
            self.pop_screen()
        if isinstance(self.screen, RunsScreen):
            self.screen.filter_failure_group(message.signature)

    def on_open_timeline(self, message: navigation.OpenTimeline) -> None:
        self.open_timeline(message.run_id, message.tokens)

    def on_open_review(self, message: navigation.OpenReview) -> None:
        from workbench.engine.review.queue import QueueSpec

        self.open_review(QueueSpec(message.query, message.name))

    def on_open_session(self, message: navigation.OpenSession) -> None:
        self.open_session(message.session)

    def on_open_fork(self, message: navigation.OpenFork) -> None:
        self.open_fork(message.run_id, message.turn, mock_call=message.mock_call)

    # ------------------------------------------------------------------ palette

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help", "Keys and what each screen does", self.action_help)
        commands = getattr(screen, "palette_commands", None)
        if commands is not None:
            for title, help_text, callback in commands():
                yield SystemCommand(title, help_text, callback)


if TYPE_CHECKING:

    def _gives_screens_what_they_use(app: WorkbenchApp) -> Workbench:
        return app  # mypy checks the App against the screens' `Workbench` protocol
