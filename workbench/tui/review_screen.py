"""Review: a queue of runs, one at a time, for the keyboard. One key labels the run shown
and moves on (the keys of `<home>/labels.toml`, else the defaults), `n` writes a note,
`s` skips, `u` undoes the last of these (a tombstone, never an edit), `p` goes back one,
`o` opens the run whole. The queue (`workbench.engine.review.queue`) decides what comes
next, counts the progress and remembers where it stopped; this screen only draws it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Header, Static

from workbench.engine.review.card import RunCard
from workbench.engine.review.labels import LabelKeys
from workbench.engine.review.queue import QueueSpec, ReviewQueue
from workbench.tui.line_input import LineInput
from workbench.tui.navigation import OpenRun
from workbench.tui.render import short_id
from workbench.tui.review_view import KeysLine, card_renderable
from workbench.tui.screens import WorkbenchScreen


class ReviewScreen(WorkbenchScreen):
    """Review: one key labels a run and moves on; n notes, s skips, u undoes."""

    # The keys here are `labels.SCREEN_KEYS`, which no label may take (a test holds them so).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "note", "Note"),
        Binding("s", "skip", "Skip"),
        Binding("u", "undo", "Undo"),
        Binding("p", "previous", "Previous", show=False),
        Binding("o", "open_run", "Open run"),
    ]

    class Opened(Message):
        def __init__(self, queue: ReviewQueue) -> None:
            super().__init__()
            self.queue = queue

    class CardLoaded(Message):
        def __init__(self, card: RunCard) -> None:
            super().__init__()
            self.card = card

    def __init__(self, spec: QueueSpec, labels: LabelKeys, author: str | None = None) -> None:
        super().__init__()
        self.spec = spec
        self.labels = labels
        self.author = author
        self.queue: ReviewQueue | None = None
        self.card: RunCard | None = None  # the card drawn (the current run's, once loaded)
        for index, (key, label) in enumerate(labels.keys.items()):
            self._bindings.bind(key, f"label({index})", label)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(f"opening the queue: {self.spec.name}…", id="review-progress")
        with VerticalScroll(id="review-body"):
            yield Static(id="review-card")
        yield Static(KeysLine(self.labels), id="review-keys")
        yield Footer()

    def on_mount(self) -> None:
        self._open()

    @work(thread=True, exclusive=True, group="open", exit_on_error=False)
    def _open(self) -> None:
        self.post_message(self.Opened(self.backend.open_review(self.spec, self.author)))

    def on_review_screen_opened(self, message: Opened) -> None:
        self.queue = message.queue
        self._show()

    @work(thread=True, exclusive=True, group="card", exit_on_error=False)
    def _load_card(self, run_id: str) -> None:
        self.post_message(self.CardLoaded(self.backend.review_card(run_id)))

    def on_review_screen_card_loaded(self, message: CardLoaded) -> None:
        current = self.queue.current if self.queue is not None else None
        if current is not None and message.card.row.run_id == current.run_id:
            self.card = message.card
            self._draw_card()

    def _show(self) -> None:
        """The progress, and the current run's card (loaded in a worker)."""
        queue = self.queue
        if queue is None:
            return
        progress = queue.progress
        line = Text.assemble((progress.text(), "bold"), (f"  ·  {self.spec.name}", "dim"))
        self.query_one("#review-progress", Static).update(line)
        current = queue.current
        box = self.query_one("#review-card", Static)
        if current is None:
            self.card = None
            done = f"Nothing left in this queue: {progress.text()}."
            box.update(Text(f"{done}\n\nu undoes the last, p goes back one, escape leaves."))
            return
        if self.card is None or self.card.row.run_id != current.run_id:
            box.update(Text(f"loading run {short_id(current.run_id)}…", style="dim"))
            self._load_card(current.run_id)
        else:
            self._draw_card()

    def _draw_card(self) -> None:
        if self.card is not None and self.queue is not None:
            written = self.queue.written(self.card.row.run_id)
            self.query_one("#review-card", Static).update(card_renderable(self.card, written))
            self.query_one("#review-body", VerticalScroll).scroll_home(animate=False)

    # ------------------------------------------------------------------ keys

    def action_label(self, index: int) -> None:
        if self.queue is None:
            return
        label = list(self.labels.keys.values())[index]
        try:
            note = self.queue.label(label)
        except OSError as exc:
            self.workbench.report_error(exc)
            return
        if note is None:
            self.notify("The queue is done: nothing to label.")
        self._show()

    def action_skip(self) -> None:
        if self.queue is not None and self.queue.skip():
            self._show()

    def action_previous(self) -> None:
        if self.queue is not None and self.queue.previous():
            self._show()

    def action_undo(self) -> None:
        if self.queue is None:
            return
        try:
            step = self.queue.undo()
        except OSError as exc:
            self.workbench.report_error(exc)
            return
        if step is None:
            self.notify("Nothing to undo in this review.")
            return
        run = short_id(self.queue.rows[step.index].run_id)
        undone = {"label": "the label", "note": "the note", "skip": "the skip"}[step.kind]
        self.notify(f"Undid {undone} on run {run}.", timeout=3)
        self._show()

    def action_note(self) -> None:
        current = self.queue.current if self.queue is not None else None
        if current is None:
            return

        def write(text: str | None) -> None:
            if text and self.queue is not None:
                try:
                    self.queue.note(text)
                except OSError as exc:
                    self.workbench.report_error(exc)
                self._show()

        title = f"note on run {short_id(current.run_id)} (enter writes it)"
        placeholder = "what is wrong, or right, with this run"
        self.app.push_screen(LineInput(title, input_id="note-text", placeholder=placeholder), write)

    def action_open_run(self) -> None:
        current = self.queue.current if self.queue is not None else None
        if current is not None:
            self.post_message(OpenRun(current.run_id, jump_to_error=current.status != "completed"))

    def on_screen_resume(self) -> None:
        self._show()  # back from the run: its card as it was
