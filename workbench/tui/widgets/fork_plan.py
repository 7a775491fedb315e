"""The fork dialog's plan panel: the changes made so far and what the fork would do with
them (`fork --dry-run`), planned again once typing pauses."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static

from workbench.engine.recording.fork.dry_run import DryRun
from workbench.engine.recording.fork.plan import ForkRequest
from workbench.tui.backend import Endpoint
from workbench.tui.fork_draft import ForkDraft, changes_text, plan_text
from workbench.tui.screens import WorkbenchWidget

# How long typing pauses before the plan is made again for the changed fork.
REPLAN_AFTER_S = 0.3

Wanted = tuple[ForkRequest, Endpoint]  # a fork and the model it would talk to


class PlanPanel(Vertical, WorkbenchWidget):
    """The draft's changes and the plan of the fork they make. `wanted` reads what the
    dialog's boxes hold now."""

    DEFAULT_CSS: ClassVar[str] = "PlanPanel { height: auto; }"

    class Planned(Message):
        def __init__(self, plan: DryRun, of: Wanted) -> None:
            super().__init__()
            self.plan = plan
            self.of = of  # the request and model it is the plan of

    def __init__(self, run_id: str, draft: ForkDraft, wanted: Callable[[], Wanted]) -> None:
        super().__init__(id="fork-plan-panel")
        self.run_id = run_id
        self.draft = draft
        self._wanted = wanted
        # The request and model the plan shown (or on its way) is of.
        self.planned: Wanted | None = None
        self._replan_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Static(changes_text(self.draft), id="fork-changes")
        yield Static(Text("planning…", style="dim"), id="fork-plan")

    def plan(self, wanted: Wanted) -> None:
        """Plan `wanted` unless it is the plan shown or on its way."""
        if wanted != self.planned:
            self.planned = wanted
            self._plan(*wanted)

    @work(thread=True, exclusive=True, group="plan", exit_on_error=False)
    def _plan(self, request: ForkRequest, endpoint: Endpoint) -> None:
        plan = self.backend.fork_plan(self.run_id, request, endpoint)
        self.post_message(self.Planned(plan, (request, endpoint)))

    def on_plan_panel_planned(self, message: Planned) -> None:
        message.stop()
        if message.of == self.planned:  # not one asked for before the latest
            self.query_one("#fork-plan", Static).update(plan_text(message.plan))

    def show_changes(self, draft: ForkDraft, *, replan: bool) -> None:
        """The draft's changes; with `replan`, the plan follows them once typing pauses (it
        never shows "no edits" under a change)."""
        self.draft = draft
        self.query_one("#fork-changes", Static).update(changes_text(draft))
        if self._replan_timer is None and replan:
            self._replan_timer = self.set_timer(REPLAN_AFTER_S, self._replan)

    def _replan(self) -> None:
        # Read the boxes while this timer is still the pending one: reading them may show
        # the changes, which would otherwise set another timer, and so on every moment.
        wanted = self._wanted()
        self._replan_timer = None
        if wanted != self.planned:
            self.query_one("#fork-plan", Static).update(
                Text("planning the changed fork…", style="dim")
            )
            self.plan(wanted)
