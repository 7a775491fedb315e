"""Fork dialog: re-run a recorded turn with a fix, watch it stream, then compare with the parent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Footer, Header, Input, Label, Log, Select, Static, TextArea

from traces.events import EventBase, ModelChunk, RunStart
from workbench.tui.backend import Endpoint, ForkContext
from workbench.tui.render import event_summary, one_line, short_id
from workbench.tui.screens import PaletteCommand, WorkbenchScreen

NO_EDIT = "none"


def edit_options(context: ForkContext) -> list[tuple[str, str]]:
    options = [("keep everything as recorded", NO_EDIT), ("system prompt", "system")]
    if context.user is not None:
        options.append(("last user message", "user"))
    options += [(f"tool description: {name}", f"tool:{name}") for name in context.tools]
    return options


def call_options(context: ForkContext) -> list[tuple[str, str]]:
    return [
        (
            f"turn {c.turn} · {c.name}({one_line(c.arguments, 30)}) → {one_line(c.result, 30)}",
            c.call_id,
        )
        for c in context.calls
    ]


class ForkScreen(WorkbenchScreen):
    """Fork: change the prompt, a tool description or a tool result, re-run from this turn."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "run_fork", "Run fork", priority=True),
        Binding("ctrl+o", "compare", "Compare with parent", priority=True),
    ]

    class ContextLoaded(Message):
        def __init__(self, context: ForkContext) -> None:
            super().__init__()
            self.context = context

    class Streamed(Message):
        def __init__(self, item: Any) -> None:
            super().__init__()
            self.item = item

    class Finished(Message):
        def __init__(self, result: Any) -> None:
            super().__init__()
            self.result = result

    def __init__(self, run_id: str, turn: int, *, mock_call: str | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.turn = turn
        self.mock_call = mock_call
        self.context: ForkContext | None = None
        self.fork_run_id: str | None = None
        self.running = False

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
            with VerticalScroll(id="fork-form"):
                with Horizontal(classes="form-row"):
                    yield Label("turn", classes="inline-label")
                    yield Input(str(self.turn), id="fork-turn", type="integer")
                    yield Select(
                        [("keep everything as recorded", NO_EDIT)],
                        value=NO_EDIT,
                        id="fork-edit",
                        allow_blank=False,
                    )
                yield TextArea("", id="fork-text", soft_wrap=True)
                yield Label(
                    "mock a recorded tool result (calls made before this turn)",
                    classes="field-label",
                )
                yield Select([], prompt="no mocked result", id="fork-call")
                yield TextArea("", id="fork-mock", soft_wrap=True)
                yield Label("model endpoint (from flags and env)", classes="field-label")
                endpoint = self.workbench.endpoint
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
                        endpoint.script or "",
                        placeholder="or a model script file",
                        id="fork-script",
                    )
                with Horizontal(id="fork-buttons"):
                    yield Button("Run fork (ctrl+r)", id="fork-run", variant="primary")
                    yield Button("Compare (ctrl+o)", id="fork-compare", disabled=True)
            with Vertical(id="fork-output"):
                yield Label("live output", classes="pane-title")
                yield Log(id="fork-log", highlight=False)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"fork {short_id(self.run_id)} at turn {self.turn}"
        self.query_one("#fork-text", TextArea).display = False
        self._load_context(self.turn)

    # ------------------------------------------------------------------ context

    @work(thread=True, exclusive=True, group="context", exit_on_error=False)
    def _load_context(self, turn: int) -> None:
        self.post_message(self.ContextLoaded(self.backend.fork_context(self.run_id, turn)))

    def on_fork_screen_context_loaded(self, message: ContextLoaded) -> None:
        context = self.context = message.context
        edit = self.query_one("#fork-edit", Select)
        edit.set_options(edit_options(context))
        edit.value = NO_EDIT
        calls = self.query_one("#fork-call", Select)
        calls.set_options(call_options(context))
        if self.mock_call and any(c.call_id == self.mock_call for c in context.calls):
            calls.value = self.mock_call
        log = self.query_one("#fork-log", Log)
        if context.turn not in context.turns:
            log.write_line(f"turn {context.turn} has no model call; pick one of {context.turns}")
        else:
            log.write_line(
                f"history as sent at turn {context.turn} is loaded; make a change and press ctrl+r"
            )

    @on(Input.Submitted, "#fork-turn")
    def _turn_changed(self, event: Input.Submitted) -> None:
        try:
            self.turn = int(event.value)
        except ValueError:
            self.notify("The turn is a whole number.", severity="warning")
            return
        self._load_context(self.turn)

    @on(Select.Changed, "#fork-edit")
    def _edit_changed(self, event: Select.Changed) -> None:
        context, value = self.context, event.value
        area = self.query_one("#fork-text", TextArea)
        area.display = value != NO_EDIT and context is not None
        if context is None or not isinstance(value, str) or value == NO_EDIT:
            area.text = ""
        elif value == "system":
            area.text = context.system or ""
        elif value == "user":
            area.text = context.user or ""
        elif value.startswith("tool:"):
            area.text = context.tools.get(value[5:], "")

    @on(Select.Changed, "#fork-call")
    def _call_changed(self, event: Select.Changed) -> None:
        if self.context is None:
            return
        call = next((c for c in self.context.calls if c.call_id == event.value), None)
        self.query_one("#fork-mock", TextArea).text = call.result if call else ""

    # ------------------------------------------------------------------ run

    def fork_request(self) -> Any:
        from workbench.engine.fork import ForkRequest

        request = ForkRequest(turn=self.turn)
        kind = self.query_one("#fork-edit", Select).value
        text = self.query_one("#fork-text", TextArea).text
        if kind == "system":
            request.system = text
        elif kind == "user":
            request.user = text
        elif isinstance(kind, str) and kind.startswith("tool:"):
            request.tool_descriptions[kind[5:]] = text
        call = self.query_one("#fork-call", Select).value
        if isinstance(call, str):
            request.mocks[call] = self.query_one("#fork-mock", TextArea).text
        return request

    def endpoint(self) -> Endpoint:
        def value(widget_id: str) -> str | None:
            return self.query_one(widget_id, Input).value.strip() or None

        return Endpoint(
            value("#fork-base-url"),
            value("#fork-model"),
            value("#fork-api-key"),
            value("#fork-script"),
        )

    @on(Button.Pressed, "#fork-run")
    def action_run_fork(self) -> None:
        if self.running:
            self.notify("The fork is still running.")
            return
        self.running = True
        self.query_one("#fork-run", Button).disabled = True
        log = self.query_one("#fork-log", Log)
        log.clear()
        log.write_line(f"forking {short_id(self.run_id)} at turn {self.turn}…")
        self._run(self.fork_request(), self.endpoint())

    @work(thread=True, exclusive=True, group="fork", exit_on_error=False)
    def _run(self, request: Any, endpoint: Endpoint) -> None:
        result = self.backend.run_fork(
            self.run_id, request, endpoint, lambda item: self.post_message(self.Streamed(item))
        )
        self.post_message(self.Finished(result))

    def on_fork_screen_streamed(self, message: Streamed) -> None:
        item, log = message.item, self.query_one("#fork-log", Log)
        if isinstance(item, EventBase):
            if isinstance(item, RunStart):
                self.fork_run_id = item.run_id
            elif isinstance(item, ModelChunk):
                return  # the text arrives as deltas; raw chunks are in the trace
            log.write(f"\n· {event_summary(item)}\n")  # type: ignore[arg-type]
        elif hasattr(item, "text"):
            log.write(item.text)

    def on_fork_screen_finished(self, message: Finished) -> None:
        self.running = False
        self.query_one("#fork-run", Button).disabled = False
        result = message.result
        log = self.query_one("#fork-log", Log)
        log.write_line(f"\nfork {short_id(result.run_id)} ended: {result.status} — {result.reason}")
        self.fork_run_id = result.run_id
        self.query_one("#fork-compare", Button).disabled = False
        self.notify(f"Fork {short_id(result.run_id)} finished: {result.status}")
        self.action_compare()

    def worker_failed(self, worker: Any) -> None:
        if worker.group == "fork":
            self.running = False
            self.query_one("#fork-run", Button).disabled = False
            self.query_one("#fork-log", Log).write_line(f"\nfork failed: {worker.error}")

    @on(Button.Pressed, "#fork-compare")
    def action_compare(self) -> None:
        if self.fork_run_id is None:
            self.notify("Run the fork first (ctrl+r).")
            return
        self.workbench.open_compare(self.run_id, self.fork_run_id)

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield ("Run fork", "Re-run from this turn with the changes", self.action_run_fork)
        yield ("Compare fork with parent", "Decision chains side by side", self.action_compare)
