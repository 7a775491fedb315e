"""The fork dialog's edit boxes: which turn, what to change (system prompt, last user
message, a tool's description) and its text, which recorded tool result to mock and the
mocked text. Every change lands in the dialog's draft as it is typed."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Label, Select, TextArea

from workbench.engine.recording.fork.plan import ForkContext, ForkRequest, RecordedCall
from workbench.tui.fork_draft import ForkDraft, call_options, edit_options, recorded_text


class ForkEdits(Vertical):
    """The boxes that make a fork's changes; `draft` holds what they changed."""

    DEFAULT_CSS: ClassVar[str] = "ForkEdits { height: auto; }"

    class Changed(Message):
        """The draft changed (an edit or a mock typed, or one taken back)."""

    class TurnChosen(Message):
        def __init__(self, turn: int) -> None:
            super().__init__()
            self.turn = turn

    def __init__(self, turn: int, draft: ForkDraft, *, mock_call: str | None = None) -> None:
        super().__init__(id="fork-edits")
        self.turn = turn
        self.draft = draft
        self.mock_call = mock_call  # the call the dialog was opened to mock
        self.context: ForkContext | None = None
        self.edit_key: str | None = None  # what the edit box shows
        self.shown_call: str | None = None  # which result the mock box shows

    def compose(self) -> ComposeResult:
        with Horizontal(classes="form-row"):
            yield Label("turn", classes="inline-label")
            yield Input(str(self.turn), id="fork-turn", type="integer")
            yield Select([], prompt="change…", id="fork-edit")
        yield TextArea("", id="fork-text", soft_wrap=True)
        yield Label(
            "mock a recorded tool result (calls made before this turn)", classes="field-label"
        )
        yield Select([], prompt="no mocked result", id="fork-call")
        yield TextArea("", id="fork-mock", soft_wrap=True)

    def on_mount(self) -> None:
        self.query_one("#fork-text", TextArea).display = False
        self.query_one("#fork-mock", TextArea).display = False

    def show_context(self, context: ForkContext) -> None:
        """The choices of the history at the fork turn; mocks of calls it does not hold go."""
        self.context = context
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

    def request(self, turn: int) -> ForkRequest:
        """The fork the boxes describe now, even if their last change is on its way."""
        self._edit_typed()
        self._mock_typed()
        request = ForkRequest(turn=turn)
        for key, text in self.draft.edits.items():
            if key == "system":
                request.system = text
            elif key == "user":
                request.user = text
            else:
                request.tool_descriptions[key.removeprefix("tool:")] = text
        request.mocks.update(self.draft.mocks)
        return request

    @on(Input.Submitted, "#fork-turn")
    def _turn_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            turn = int(event.value)
        except ValueError:
            self.notify("The turn is a whole number.", severity="warning")
            return
        self.post_message(self.TurnChosen(turn))

    # ------------------------------------------------------------------ edits and mocks

    @on(Select.Changed, "#fork-edit")
    def _edit_changed(self, event: Select.Changed) -> None:
        area = self.query_one("#fork-text", TextArea)
        key = event.value if isinstance(event.value, str) else None
        self.edit_key = None  # loading the box is not an edit
        area.display = key is not None and self.context is not None
        if key is None or self.context is None:
            return
        area.text = self.draft.edits.get(key, recorded_text(self.context, key))
        self.edit_key = key

    @on(TextArea.Changed, "#fork-text")
    def _edit_typed(self) -> None:
        key, context = self.edit_key, self.context
        if key is None or context is None:
            return
        text = self.query_one("#fork-text", TextArea).text
        self._keep(self.draft.edits, key, text, recorded_text(context, key))

    @on(Select.Changed, "#fork-call")
    def _call_changed(self, event: Select.Changed) -> None:
        area = self.query_one("#fork-mock", TextArea)
        call = self._recorded_call(event.value)
        self.shown_call = None
        area.display = call is not None
        if call is None:
            return
        area.text = self.draft.mocks.get(call.call_id, call.result)
        self.shown_call = call.call_id
        if call.call_id == self.mock_call:
            area.focus()

    @on(TextArea.Changed, "#fork-mock")
    def _mock_typed(self) -> None:
        call = self._recorded_call(self.shown_call)
        if call is None:
            return
        text = self.query_one("#fork-mock", TextArea).text
        self._keep(self.draft.mocks, call.call_id, text, call.result)

    def _keep(self, changes: dict[str, str], key: str, text: str, recorded: str) -> None:
        """A box's text in the draft, unless it is what was recorded. Only a change to the
        draft is announced: reading the boxes (for a plan) must not ask for another plan."""
        before = changes.get(key)
        if text == recorded:
            changes.pop(key, None)
        else:
            changes[key] = text
        if changes.get(key) != before:
            self.post_message(self.Changed())

    def _recorded_call(self, call_id: object) -> RecordedCall | None:
        if self.context is None or not isinstance(call_id, str):
            return None
        return next((c for c in self.context.calls if c.call_id == call_id), None)

    # ------------------------------------------------------------------ direct keys

    def edit(self, key: str) -> None:
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

    def next_tool(self) -> None:
        """The next tool's description (the first one after any other choice)."""
        if self.context is None or not self.context.tools:
            self.notify("The run offered no tools.", severity="warning")
            return
        keys = [f"tool:{name}" for name in self.context.tools]
        current = self.query_one("#fork-edit", Select).value
        at = keys.index(current) + 1 if current in keys else 0
        self.edit(keys[at % len(keys)])

    def next_call(self) -> None:
        """The next recorded call's result, in the mock box, focused."""
        if self.context is None or not self.context.calls:
            self.notify("No tool call was made before this turn.", severity="warning")
            return
        ids = [call.call_id for call in self.context.calls]
        select = self.query_one("#fork-call", Select)
        at = ids.index(select.value) + 1 if select.value in ids else 0
        select.value = ids[at % len(ids)]
        self.call_after_refresh(self.query_one("#fork-mock", TextArea).focus)
