"""Fork dialog: re-run a recorded turn with fixes, watch it stream, then compare with the parent.

One fork can carry several changes at once: pick what to change (system prompt, last user
message, a tool's description) and edit it, pick another and edit that too; the same for
recorded tool results. Every change is kept in a draft the App remembers per run, so
leaving the dialog, forking again or a stray ctrl+c loses nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Button, Header, Input, Label, Select, Static, TextArea

from agent_core.agent import TextDelta
from traces.events import Event, ModelChunk, RunStart
from workbench.engine.recording.fork.dry_run import DryRun
from workbench.engine.recording.fork.plan import ForkContext, ForkRequest, RecordedCall
from workbench.tui.backend import CancelFork, Endpoint, ForkOutcome
from workbench.tui.footer import Footer
from workbench.tui.fork_draft import (
    ForkDraft,
    call_options,
    changes_text,
    edit_options,
    plan_text,
    recorded_text,
    turns_text,
)
from workbench.tui.navigation import OpenCompare
from workbench.tui.render import event_summary, short_id
from workbench.tui.screens import PaletteCommand, WorkbenchScreen

WIDE_FOOTER = 100  # columns from which the footer has room for the palette's key too
# How long typing pauses before the plan is made again for the changed fork.
REPLAN_AFTER_S = 0.3
NO_MODEL = (
    "No model to fork with: fill in a base URL and model name, or a model script file, below."
)


class ForkOutput(VerticalScroll):
    """The fork's live output: streamed text and one line per event, wrapped at words."""

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

    class Planned(Message):
        def __init__(self, plan: DryRun, of: tuple[ForkRequest, Endpoint]) -> None:
            super().__init__()
            self.plan = plan
            self.of = of  # the request and model it is the plan of

    def __init__(self, run_id: str, turn: int, *, mock_call: str | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.turn = turn
        self.mock_call = mock_call
        self.context: ForkContext | None = None
        self.fork_run_id: str | None = None
        self.running = False
        self.draft = ForkDraft(turn)
        self._edit_key: str | None = None  # what the edit box shows
        self._call_id: str | None = None  # which result the mock box shows
        self._cancel: CancelFork | None = None
        # The request and model the plan shown (or on its way) is of.
        self._planned: tuple[ForkRequest, Endpoint] | None = None
        self._replan_timer: Timer | None = None
        # The model settings the model boxes were filled from (`compose`; for the parent's
        # wire format once it is known).
        self._shown = Endpoint()

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
                    with Horizontal(classes="form-row"):
                        yield Label("turn", classes="inline-label")
                        yield Input(str(self.turn), id="fork-turn", type="integer")
                        yield Select([], prompt="change…", id="fork-edit")
                    yield TextArea("", id="fork-text", soft_wrap=True)
                    yield Label(
                        "mock a recorded tool result (calls made before this turn)",
                        classes="field-label",
                    )
                    yield Select([], prompt="no mocked result", id="fork-call")
                    yield TextArea("", id="fork-mock", soft_wrap=True)
                    yield Static(changes_text(self.draft), id="fork-changes")
                    yield Static(Text("planning…", style="dim"), id="fork-plan")
                    yield Label("model", classes="field-label")
                    endpoint = self._shown = self.workbench.fork_endpoint or self.workbench.endpoint
                    with Horizontal(classes="form-row"):
                        yield Input(
                            endpoint.base_url or "",
                            placeholder="base URL, e.g. http://127.0.0.1:8080/v1",
                            id="fork-base-url",
                        )
                        yield Input(endpoint.model or "", placeholder="model name", id="fork-model")
                    with Horizontal(classes="form-row"):
                        yield Input(
                            endpoint.api_key or "",
                            placeholder="API key (never written to traces)",
                            password=True,
                            id="fork-api-key",
                        )
                        yield Input(
                            str(endpoint.script or ""),
                            placeholder="or a model script file",
                            id="fork-script",
                        )
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

    def on_mount(self) -> None:
        self.sub_title = f"fork {short_id(self.run_id)} at turn {self.turn}"
        self.query_one("#fork-text", TextArea).display = False
        self.query_one("#fork-mock", TextArea).display = False
        # The App keeps this very draft: every change is remembered as it is typed.
        self.draft = self.workbench.fork_drafts.setdefault(self.run_id, self.draft)
        # What to change is the first choice (the mocked result's box, once it shows, when
        # the dialog was opened to mock a call), not the scrolling form around it.
        self.query_one("#fork-edit", Select).focus()
        self._load_context(self.turn, self.endpoint())
        if not self.draft.mocks:
            # Planned beside the context, which it does not need: no mocked call to check
            # against the history first.
            self._start_plan(self.fork_request())

    @on(Input.Changed, "#fork-base-url, #fork-model, #fork-api-key, #fork-script")
    def _endpoint_changed(self) -> None:
        # Remembered for the next dialog, which may fork a run of another wire format.
        self.workbench.fork_endpoint = replace(self.endpoint(), api=self.workbench.endpoint.api)

    def _show_settings_for(self, api: str) -> None:
        """Fill the model boxes with what the environment gives for the parent's wire
        format (a fork of an Anthropic run reads ANTHROPIC_BASE_URL, not OpenAI's), when
        they still hold what they were filled with."""
        shown = self._shown
        if shown.api is not None or not shown.from_environment:
            return  # a wire format chosen, or nothing left to the environment
        boxes = {"base_url": "#fork-base-url", "model": "#fork-model", "api_key": "#fork-api-key"}
        inputs = {name: self.query_one(box, Input) for name, box in boxes.items()}
        if any(inputs[name].value.strip() != (getattr(shown, name) or "") for name in boxes):
            return  # changed by hand: the user's choice
        again = shown.for_api(api)
        if all(getattr(again, name) == getattr(shown, name) for name in boxes):
            return  # the same values (a chat run): a fork reads them again for its format
        self._shown = again
        for name, box in inputs.items():
            box.value = getattr(again, name) or ""

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
        self._show_settings_for(context.api)
        # A mocked result only exists in the history of turns after its call.
        known = {c.call_id for c in context.calls}
        self.draft.mocks = {k: v for k, v in self.draft.mocks.items() if k in known}
        edit = self.query_one("#fork-edit", Select)
        edit.set_options(edit_options(context))
        if self.draft.edits:
            edit.value = next(iter(self.draft.edits))
        calls = self.query_one("#fork-call", Select)
        calls.set_options(call_options(context))
        wanted = self.mock_call or next(iter(self.draft.mocks), None)
        if wanted in known:
            calls.value = wanted
        self._show_changes()
        request = self.fork_request()
        if (request, self.endpoint()) != self._planned:
            self._start_plan(request)
        output = self.output
        if context.fork_script is not None:
            # No model chosen yet and the run ships an offline model for its forks: use it.
            self.query_one("#fork-script", Input).value = str(context.fork_script)
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

    # ------------------------------------------------------------------ the plan

    def _start_plan(self, request: ForkRequest) -> None:
        endpoint = self.endpoint()
        self._planned = (request, endpoint)
        self._plan(request, endpoint)

    @work(thread=True, exclusive=True, group="plan", exit_on_error=False)
    def _plan(self, request: ForkRequest, endpoint: Endpoint) -> None:
        plan = self.backend.fork_plan(self.run_id, request, endpoint)
        self.post_message(self.Planned(plan, (request, endpoint)))

    def on_fork_screen_planned(self, message: Planned) -> None:
        if message.of == self._planned:  # not one asked for before the latest
            self.query_one("#fork-plan", Static).update(plan_text(message.plan))

    @on(Input.Submitted, "#fork-turn")
    def _turn_changed(self, event: Input.Submitted) -> None:
        try:
            self.turn = int(event.value)
        except ValueError:
            self.notify("The turn is a whole number.", severity="warning")
            return
        self._load_context(self.turn, self.endpoint())

    # ------------------------------------------------------------------ edits and mocks

    @on(Select.Changed, "#fork-edit")
    def _edit_changed(self, event: Select.Changed) -> None:
        area = self.query_one("#fork-text", TextArea)
        key = event.value if isinstance(event.value, str) else None
        self._edit_key = None  # loading the box is not an edit
        area.display = key is not None and self.context is not None
        if key is None or self.context is None:
            return
        area.text = self.draft.edits.get(key, recorded_text(self.context, key))
        self._edit_key = key

    @on(TextArea.Changed, "#fork-text")
    def _edit_typed(self) -> None:
        key, context = self._edit_key, self.context
        if key is None or context is None:
            return
        text = self.query_one("#fork-text", TextArea).text
        if text == recorded_text(context, key):
            self.draft.edits.pop(key, None)
        else:
            self.draft.edits[key] = text
        self._show_changes()

    @on(Select.Changed, "#fork-call")
    def _call_changed(self, event: Select.Changed) -> None:
        area = self.query_one("#fork-mock", TextArea)
        call = self._recorded_call(event.value)
        self._call_id = None
        area.display = call is not None
        if call is None:
            return
        area.text = self.draft.mocks.get(call.call_id, call.result)
        self._call_id = call.call_id
        if call.call_id == self.mock_call:
            area.focus()

    @on(TextArea.Changed, "#fork-mock")
    def _mock_typed(self) -> None:
        call = self._recorded_call(self._call_id)
        if call is None:
            return
        text = self.query_one("#fork-mock", TextArea).text
        if text == call.result:
            self.draft.mocks.pop(call.call_id, None)
        else:
            self.draft.mocks[call.call_id] = text
        self._show_changes()

    # ------------------------------------------------------------------ direct keys

    def action_edit(self, key: str) -> None:
        """Show `key`'s text (system, user, tool:NAME) in the edit box and focus it."""
        if self.context is None:
            return
        options = [value for _, value in edit_options(self.context)]
        if key not in options:
            self.notify("This turn has no user message to edit.", severity="warning")
            return
        select = self.query_one("#fork-edit", Select)
        if select.value != key:
            select.value = key
        self.call_after_refresh(self.query_one("#fork-text", TextArea).focus)

    def action_next_tool(self) -> None:
        """The next tool's description (the first one after any other choice)."""
        if self.context is None or not self.context.tools:
            self.notify("The run offered no tools.", severity="warning")
            return
        keys = [f"tool:{name}" for name in self.context.tools]
        current = self.query_one("#fork-edit", Select).value
        at = keys.index(current) + 1 if current in keys else 0
        self.action_edit(keys[at % len(keys)])

    def action_next_call(self) -> None:
        """The next recorded call's result, in the mock box, focused."""
        if self.context is None or not self.context.calls:
            self.notify("No tool call was made before this turn.", severity="warning")
            return
        ids = [call.call_id for call in self.context.calls]
        select = self.query_one("#fork-call", Select)
        at = ids.index(select.value) + 1 if select.value in ids else 0
        select.value = ids[at % len(ids)]
        self.call_after_refresh(self.query_one("#fork-mock", TextArea).focus)

    def action_select_all(self) -> None:
        focused = self.focused
        if isinstance(focused, TextArea | Input):
            focused.select_all()

    def _recorded_call(self, call_id: object) -> RecordedCall | None:
        if self.context is None or not isinstance(call_id, str):
            return None
        return next((c for c in self.context.calls if c.call_id == call_id), None)

    def _show_changes(self) -> None:
        self.query_one("#fork-changes", Static).update(changes_text(self.draft))
        if self._replan_timer is None and self.context is not None:
            # The plan follows the changes, once typing pauses: it never shows "no edits"
            # under a change.
            self._replan_timer = self.set_timer(REPLAN_AFTER_S, self._replan)

    def _replan(self) -> None:
        # Read the boxes while this timer is still the pending one: reading them shows the
        # changes, which would otherwise set another timer, and so on every moment.
        request = self.fork_request()
        self._replan_timer = None
        if (request, self.endpoint()) != self._planned:
            plan = self.query_one("#fork-plan", Static)
            plan.update(Text("planning the changed fork…", style="dim"))
            self._start_plan(request)

    # ------------------------------------------------------------------ run

    def fork_request(self) -> ForkRequest:
        # What the boxes hold now, even if their last change is still on its way.
        self._edit_typed()
        self._mock_typed()
        request = ForkRequest(turn=self.turn)
        for key, text in self.draft.edits.items():
            if key == "system":
                request.system = text
            elif key == "user":
                request.user = text
            else:
                request.tool_descriptions[key.removeprefix("tool:")] = text
        request.mocks.update(self.draft.mocks)
        return request

    def endpoint(self) -> Endpoint:
        def value(widget_id: str) -> str | None:
            return self.query_one(widget_id, Input).value.strip() or None

        script = value("#fork-script")
        # The settings the boxes were filled from: what came from the environment and is
        # unchanged is read again for the fork's wire format.
        return self._shown.edited(
            base_url=value("#fork-base-url"),
            model=value("#fork-model"),
            api_key=value("#fork-api-key"),
            script=Path(script) if script else None,
        )

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
