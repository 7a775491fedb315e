"""Fork dialog: re-run a recorded turn with fixes, watch it stream, then compare with the parent.

One fork can carry several changes at once: pick what to change (system prompt, last user
message, a tool's description) and edit it, pick another and edit that too; the same for
recorded tool results. Every change is kept in a draft the App remembers per run, so
leaving the dialog, forking again or a stray ctrl+c loses nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Header, Input, Label, Static, TextArea

from agent_core.agent import TextDelta
from traces.events import Event, ModelChunk, RunStart
from workbench.engine.recording.fork.plan import ForkContext, ForkRequest
from workbench.tui.backend import CancelFork, Endpoint, ForkOutcome
from workbench.tui.footer import Footer
from workbench.tui.fork_draft import ForkDraft, turns_text
from workbench.tui.navigation import OpenCompare
from workbench.tui.render import event_summary, short_id
from workbench.tui.screens import PaletteCommand, WorkbenchScreen
from workbench.tui.widgets.fork_edits import ForkEdits
from workbench.tui.widgets.fork_model import ModelBoxes
from workbench.tui.widgets.fork_output import ForkOutput
from workbench.tui.widgets.fork_plan import PlanPanel

WIDE_FOOTER = 100  # columns from which the footer has room for the palette's key too
NO_MODEL = (
    "No model to fork with: fill in a base URL and model name, or a model script file, below."
)


class ForkScreen(WorkbenchScreen):
    """Fork: change prompts, tool descriptions and tool results, re-run from this turn."""

    # Direct keys for what to change, shown in the footer: one key (pressed again: the
    # next tool or call) instead of opening a dropdown and walking it.
    # Short names, a compact footer, compare only once there is a fork to compare, and
    # `q` and `ctrl+a` (which work as everywhere) left out: every key shows at 80 columns.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "app.quit", "Quit", show=False),
        Binding("ctrl+r", "run_fork", "Run fork", priority=True),
        Binding("ctrl+x", "cancel_fork", "Cancel", priority=True),
        Binding("ctrl+o", "compare", "Compare", priority=True, tooltip="Compare with parent"),
        Binding("f2", "edit('system')", "System", tooltip="Edit the system prompt"),
        Binding("f3", "edit('user')", "User", tooltip="Edit the last user message"),
        Binding("f4", "next_tool", "Tool", tooltip="Edit the next tool's description"),
        Binding("f5", "next_call", "Mock", tooltip="Mock the next recorded tool result"),
        Binding("ctrl+a", "select_all", "Select all", priority=True, show=False),
    ]

    class ContextLoaded(Message):
        def __init__(self, context: ForkContext) -> None:
            super().__init__()
            self.context = context

    class Streamed(Message):
        def __init__(self, item: Event | TextDelta) -> None:
            super().__init__()
            self.item = item

    class Finished(Message):
        def __init__(self, outcome: ForkOutcome) -> None:
            super().__init__()
            self.outcome = outcome

    def __init__(self, run_id: str, turn: int, *, mock_call: str | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.turn = turn
        self.mock_call = mock_call
        self.context: ForkContext | None = None
        self.fork_run_id: str | None = None
        self.running = False
        self.draft = ForkDraft(turn)
        self._cancel: CancelFork | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(
            Text.assemble(
                ("fork ", "dim"), (short_id(self.run_id), "bold"), (f" at turn {self.turn}", "bold")
            ),
            classes="summary",
            id="fork-title",
        )
        with Horizontal():
            with Vertical(id="fork-side"):
                with VerticalScroll(id="fork-form"):
                    # The App keeps this very draft: every change is remembered as typed.
                    self.draft = self.workbench.fork_drafts.setdefault(self.run_id, self.draft)
                    yield ForkEdits(self.turn, self.draft, mock_call=self.mock_call)
                    yield PlanPanel(self.run_id, self.draft, self._wanted)
                    yield ModelBoxes()
                # Below the scrolling form, not in it: Run stays on screen however long
                # the plan (the keys are in the footer).
                with Horizontal(id="fork-buttons"):
                    yield Button("Run fork", id="fork-run", variant="primary")
                    yield Button("Cancel", id="fork-cancel", disabled=True)
                    yield Button("Compare", id="fork-compare", disabled=True)
            with Vertical(id="fork-output"):
                yield Label("live output", classes="pane-title")
                yield ForkOutput(id="fork-log")
        yield Footer(compact=True)

    def on_resize(self) -> None:
        # The command palette's key (ctrl+p works still) gives its room to the dialog's own
        # keys in a narrow terminal.
        footer = self.query_one(Footer)
        wide = self.size.width >= WIDE_FOOTER
        if footer.show_command_palette != wide:
            footer.show_command_palette = wide
            footer.refresh(recompose=True)

    @property
    def output(self) -> ForkOutput:
        return self.query_one("#fork-log", ForkOutput)

    @property
    def edits(self) -> ForkEdits:
        return self.query_one(ForkEdits)

    @property
    def plan(self) -> PlanPanel:
        return self.query_one(PlanPanel)

    def on_mount(self) -> None:
        self.sub_title = f"fork {short_id(self.run_id)} at turn {self.turn}"
        # What to change is the first choice (the mocked result's box, once it shows, when
        # the dialog was opened to mock a call), not the scrolling form around it.
        self.query_one("#fork-edit").focus()
        self._load_context(self.turn, self.endpoint())
        if not self.draft.mocks:
            # Planned beside the context, which it does not need: no mocked call to check
            # against the history first.
            self.plan.plan(self._wanted())

    def unsaved_work(self) -> str | None:
        """Why quitting now would lose something (the App asks before ctrl+c quits)."""
        if self.running:
            return "A fork is running"
        if not self.draft.is_empty():
            return "The fork form has changes"
        return None

    # ------------------------------------------------------------------ context

    @work(thread=True, exclusive=True, group="context", exit_on_error=False)
    def _load_context(self, turn: int, endpoint: Endpoint) -> None:
        context = self.backend.fork_context(self.run_id, turn, endpoint)
        self.post_message(self.ContextLoaded(context))

    def on_fork_screen_context_loaded(self, message: ContextLoaded) -> None:
        context = self.context = message.context
        self.draft.turn = context.turn
        self.query_one(ModelBoxes).show_settings_for(context.api)
        self.edits.show_context(context)  # a mocked result only exists after its call
        self._show_changes()
        self.plan.plan(self._wanted())
        output = self.output
        if context.fork_script is not None:
            # No model chosen yet and the run ships an offline model for its forks: use it.
            self.query_one(ModelBoxes).use_script(context.fork_script)
            output.write_line(
                "this run comes with an offline scripted model for its forks; it is filled "
                "in below, so the fork needs no network",
                "cyan",
            )
        if context.turn not in context.turns:
            output.write_line(
                f"turn {context.turn} has no model call; pick one of {turns_text(context.turns)}",
                "yellow",
            )
        else:
            output.write_line(
                f"history as sent at turn {context.turn} is loaded; make your changes and "
                "press ctrl+r",
                "dim",
            )

    @on(ForkEdits.TurnChosen)
    def _turn_chosen(self, message: ForkEdits.TurnChosen) -> None:
        self.turn = message.turn
        self._load_context(self.turn, self.endpoint())

    # ------------------------------------------------------------------ direct keys

    def action_edit(self, key: str) -> None:
        self.edits.edit(key)

    def action_next_tool(self) -> None:
        self.edits.next_tool()

    def action_next_call(self) -> None:
        self.edits.next_call()

    def action_select_all(self) -> None:
        focused = self.focused
        if isinstance(focused, TextArea | Input):
            focused.select_all()

    @on(ForkEdits.Changed)
    def _show_changes(self) -> None:
        self.plan.show_changes(self.draft, replan=self.context is not None)

    # ------------------------------------------------------------------ run

    def fork_request(self) -> ForkRequest:
        return self.edits.request(self.turn)

    def endpoint(self) -> Endpoint:
        return self.query_one(ModelBoxes).endpoint()

    def _wanted(self) -> tuple[ForkRequest, Endpoint]:
        return self.fork_request(), self.endpoint()

    @on(Button.Pressed, "#fork-run")
    def action_run_fork(self) -> None:
        if self.running:
            self.notify("The fork is still running; ctrl+x cancels it.")
            return
        endpoint = self.endpoint()
        if not endpoint.script and not (endpoint.model and (endpoint.base_url or endpoint.api_key)):
            self.notify(NO_MODEL, severity="warning")
            return
        self._set_running(True)
        output = self.output
        output.clear()
        output.write_line(f"forking {short_id(self.run_id)} at turn {self.turn}…", "dim")
        self._cancel = CancelFork()
        self._run(self.fork_request(), endpoint, self._cancel)

    def _set_running(self, running: bool) -> None:
        self.running = running
        self.query_one("#fork-run", Button).disabled = running
        self.query_one("#fork-cancel", Button).disabled = not running
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_fork":
            return self.running  # else ctrl+x stays the text boxes' cut
        if action == "select_all":  # else ctrl+a stays what the focused widget makes of it
            return isinstance(self.focused, TextArea | Input)
        if action == "compare":  # shown once there is a fork to compare
            return self.fork_run_id is not None and not self.running
        return True

    @on(Button.Pressed, "#fork-cancel")
    def action_cancel_fork(self) -> None:
        if self.running and self._cancel is not None:
            self.output.write_line("cancelling…", "yellow")
            self._cancel()

    @work(thread=True, exclusive=True, group="fork", exit_on_error=False)
    def _run(self, request: ForkRequest, endpoint: Endpoint, cancel: CancelFork) -> None:
        outcome = self.backend.run_fork(
            self.run_id,
            request,
            endpoint,
            lambda item: self.post_message(self.Streamed(item)),
            cancel=cancel,
        )
        self.post_message(self.Finished(outcome))

    def on_fork_screen_streamed(self, message: Streamed) -> None:
        item, output = message.item, self.output
        if isinstance(item, TextDelta):
            output.write(item.text)
            return
        if isinstance(item, RunStart):
            self.fork_run_id = item.run_id
        elif isinstance(item, ModelChunk):
            return  # the text arrives as deltas; raw chunks are in the trace
        output.write_line(f"· {event_summary(item)}", "dim")

    def on_fork_screen_finished(self, message: Finished) -> None:
        self._set_running(False)
        result = message.outcome.result
        for note in message.outcome.notes:
            self.output.write_line(f"note: {note}", "yellow")
        self.output.write_line(
            f"fork {short_id(result.run_id)} ended: {result.status} — {result.reason}", "bold"
        )
        self.fork_run_id = result.run_id
        self.refresh_bindings()  # compare (ctrl+o) now has a fork to compare
        self.query_one("#fork-compare", Button).disabled = False
        self.notify(f"Fork {short_id(result.run_id)} finished: {result.status}")
        if result.status != "cancelled":
            self.action_compare()

    def worker_failed(self, worker: Any) -> None:
        if worker.group == "fork":
            self._set_running(False)
            self.output.write_line(f"fork failed: {worker.error}", "red")

    @on(Button.Pressed, "#fork-compare")
    def action_compare(self) -> None:
        if self.fork_run_id is None:
            self.notify("Run the fork first (ctrl+r).")
            return
        self.post_message(OpenCompare(self.run_id, self.fork_run_id))

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield ("Run fork", "Re-run from this turn with the changes", self.action_run_fork)
        yield ("Cancel fork", "Stop the running fork", self.action_cancel_fork)
        yield ("Compare fork with parent", "Decision chains side by side", self.action_compare)
