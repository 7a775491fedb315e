"""Replay stepper: walk a run event by event like a video, and verify it replays offline."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar, Literal

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Header, Static

from traces.events import Event
from workbench.engine.recording.replay.process import ReplayProgress
from workbench.engine.recording.replay.verify import ReplayOutcome
from workbench.tui.backend import NotAvailable
from workbench.tui.footer import Footer
from workbench.tui.paged_list import PagedList
from workbench.tui.render import event_line, render_event, short_id
from workbench.tui.screens import PaletteCommand, WorkbenchScreen

Pacing = Literal["recorded", "fast"]
FAST_STEP_S = 0.05
MAX_PAUSE_S = 3.0  # a recorded gap longer than this plays as this, so play never stalls


def position_text(
    index: int, total: int, event: Event | None, playing: bool, pacing: Pacing
) -> Text:
    """Where the stepper is, numbered as the trace numbers its events (`seq`, from 0), as
    the list's first column and the detail's header are."""
    turn = f" · turn {event.turn}" if event is not None and event.turn is not None else ""
    state = ("▶ playing", "bold green") if playing else ("⏸ paused", "yellow")
    seq = event.seq if event is not None else index  # the list's index is the seq
    where = (str(seq), "bold") if total else ("—", "dim")  # as the list's column has it
    return Text.assemble(
        ("seq ", "dim"),
        where,
        (f" of 0–{max(total - 1, 0)}{turn}  ·  ", "dim"),
        state,
        (f"  ·  pacing: {pacing}", "dim"),
    )


VERIFY_STARTED = "verify replay: re-running offline from the recording…"


def progress_text(progress: ReplayProgress) -> Text:
    """How far a verify replay running in its own process is."""
    if progress.stage == "reading":
        if progress.total and progress.done >= progress.total:
            how = "read, preparing the replay"
        else:
            how = f"reading it, {100 * progress.done // max(progress.total, 1)}%"
    else:
        how = f"{progress.done:,} of {progress.total:,} events matched"
    return Text(f"{VERIFY_STARTED} {how}", style="dim")


def render_outcome(outcome: ReplayOutcome) -> RenderableType:
    """A `ReplayOutcome` from the engine: verdict first, then the first divergence."""
    style = {"identical": "bold green", "diverged": "bold red", "incomplete": "yellow"}
    verdict = Text.assemble(
        ("verify replay: ", "bold"),
        (str(outcome.status), style.get(outcome.status, "")),
        (f"  ·  {outcome.events_compared} of {outcome.events_recorded} events matched", "dim"),
        (f"  ·  {outcome.turns_replayed} model turns served offline", "dim"),
    )
    parts: list[RenderableType] = [verdict]
    if outcome.note:
        parts.append(Text(outcome.note, style="yellow"))
    divergence = outcome.divergence
    if divergence is not None:
        parts.append(
            Text.assemble(
                ("first divergence: ", "bold red"),
                f"{divergence.event_type} at seq {divergence.recorded_seq}, ",
                f"turn {divergence.turn} — "
                if divergence.turn is not None
                else "outside a turn — ",
                (divergence.reason, ""),
            )
        )
        table = Table(box=None, header_style="bold dim", expand=True)
        table.add_column("field", no_wrap=True)
        table.add_column("recorded", style="green", overflow="fold")
        table.add_column("replayed", style="red", overflow="fold")
        for diff in divergence.diffs[:20]:
            left = "<absent>" if diff.absent == "recorded" else _short(diff.recorded)
            right = "<absent>" if diff.absent == "replayed" else _short(diff.replayed)
            table.add_row(Text(diff.path), Text(left), Text(right))
        if divergence.diffs:
            parts.append(table)
    return Group(*parts)


def _short(value: Any, limit: int = 300) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ReplayScreen(WorkbenchScreen):
    """Replay: step through every recorded event, play it back, verify it replays offline."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n,right", "step(1)", "Next"),
        Binding("p,left", "step(-1)", "Previous"),
        Binding("space", "play", "Play/pause"),
        Binding("t", "toggle_pacing", "Pacing"),
        Binding("e", "first_error", "First error"),
        Binding("v", "verify", "Verify replay"),
    ]

    class Counted(Message):
        def __init__(self, total: int) -> None:
            super().__init__()
            self.total = total

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, type(self))  # only the newest count matters

    class Progressed(Message):
        def __init__(self, progress: ReplayProgress) -> None:
            super().__init__()
            self.progress = progress

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, type(self))  # only how far it is now matters

    class Verified(Message):
        def __init__(self, outcome: ReplayOutcome) -> None:
            super().__init__()
            self.outcome = outcome

    class FailureFound(Message):
        def __init__(self, seq: int | None) -> None:
            super().__init__()
            self.seq = seq

    def __init__(self, run_id: str, seq: int = 0, *, verify: bool = False) -> None:
        super().__init__()
        self.run_id = run_id
        self.start_seq = seq
        self.verify_on_open = verify
        self.playing = False
        self.pacing: Pacing = "recorded"
        self._timer: Timer | None = None
        self._divergence_seq: int | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(
            Text.assemble(("replay ", "dim"), (short_id(self.run_id), "bold")), classes="summary"
        )
        yield PagedList(self._fetch, self._render_row, id="replay-timeline")
        yield Static("", id="replay-position")
        yield Static("", id="replay-verify")
        with VerticalScroll(id="replay-detail"):
            yield Static("", id="replay-event")
        yield Footer()

    @property
    def timeline(self) -> PagedList[Event]:
        return self.query_one("#replay-timeline", PagedList)

    def on_mount(self) -> None:
        self.sub_title = f"replay {short_id(self.run_id)}"
        self.timeline.focus()
        self._count()
        if self.verify_on_open:
            self.action_verify()

    def _fetch(self, offset: int, limit: int) -> list[Event]:
        return self.backend.events(self.run_id, offset, limit)

    def _render_row(self, event: Event, index: int, width: int) -> Text:
        return event_line(event, width)

    @work(thread=True, exclusive=True, group="count", exit_on_error=False)
    def _count(self) -> None:
        self.post_message(self.Counted(self.backend.count_events(self.run_id)))

    def on_replay_screen_counted(self, message: Counted) -> None:
        # The verdict may land first: then the list opens at the divergence, not event 1.
        self.timeline.reset(message.total, cursor=self._divergence_seq or self.start_seq)
        self._update_position(None)

    # ------------------------------------------------------------------ stepping

    @on(PagedList.Highlighted, "#replay-timeline")
    def _highlighted(self, message: PagedList.Highlighted) -> None:
        event = message.row
        self._update_position(event)
        body = self.query_one("#replay-event", Static)
        body.update(render_event(event) if event is not None else Text("loading…", style="dim"))

    def _update_position(self, event: Event | None) -> None:
        timeline = self.timeline
        self.query_one("#replay-position", Static).update(
            position_text(timeline.cursor, timeline.total, event, self.playing, self.pacing)
        )

    def action_step(self, delta: int) -> None:
        self.timeline.move_to(self.timeline.cursor + delta)

    def action_toggle_pacing(self) -> None:
        self.pacing = "fast" if self.pacing == "recorded" else "recorded"
        self._update_position(self.timeline.row(self.timeline.cursor))

    def action_play(self) -> None:
        self.playing = not self.playing
        if self.playing:
            if self.timeline.cursor >= self.timeline.total - 1:
                self.timeline.move_to(0)
            self._schedule()
        elif self._timer is not None:
            self._timer.stop()
        self._update_position(self.timeline.row(self.timeline.cursor))

    def _schedule(self) -> None:
        timeline = self.timeline
        current = timeline.row(timeline.cursor)
        following = timeline.row(timeline.cursor + 1)
        if current is None or following is None:
            delay = FAST_STEP_S  # the next page is on its way; look again shortly
        elif self.pacing == "fast":
            delay = FAST_STEP_S
        else:
            delay = min(max((following.ts - current.ts).total_seconds(), 0.0), MAX_PAUSE_S)
        self._timer = self.set_timer(delay, self._tick)

    def _tick(self) -> None:
        if not self.playing:
            return
        timeline = self.timeline
        if timeline.cursor >= timeline.total - 1:
            self.playing = False
            self._update_position(timeline.row(timeline.cursor))
            return
        if timeline.row(timeline.cursor + 1) is not None:
            timeline.move_to(timeline.cursor + 1)
        self._schedule()

    def on_unmount(self) -> None:
        self.playing = False

    # ------------------------------------------------------------------ errors and verify

    def action_first_error(self) -> None:
        self._find_failure()

    @work(thread=True, exclusive=True, group="find", exit_on_error=False)
    def _find_failure(self) -> None:
        event = self.backend.first_failure(self.run_id)
        self.post_message(self.FailureFound(event.seq if event is not None else None))

    def on_replay_screen_failure_found(self, message: FailureFound) -> None:
        if message.seq is None:
            self.notify("No errors in this run.")
        else:
            self.timeline.move_to(message.seq)

    def action_verify(self) -> None:
        self.query_one("#replay-verify", Static).update(Text(VERIFY_STARTED, style="dim"))
        self._verify()

    @work(exclusive=True, group="verify", exit_on_error=False)
    async def _verify(self) -> None:
        # The replay runs in a process of its own (the backend's door to the engine): this
        # worker only waits for its reports, and cancelling it (leaving the screen,
        # quitting, a new `v`) kills that process.
        outcome = await self.backend.verify_replay(
            self.run_id, lambda progress: self.post_message(self.Progressed(progress))
        )
        self.post_message(self.Verified(outcome))

    def on_replay_screen_progressed(self, message: Progressed) -> None:
        self.query_one("#replay-verify", Static).update(progress_text(message.progress))

    def on_replay_screen_verified(self, message: Verified) -> None:
        self.query_one("#replay-verify", Static).update(render_outcome(message.outcome))
        divergence = message.outcome.divergence
        if divergence is not None and divergence.recorded_seq is not None:
            self._divergence_seq = divergence.recorded_seq
            self.timeline.move_to(divergence.recorded_seq)

    def worker_failed(self, worker: Any) -> None:
        if worker.group != "verify":
            return
        if isinstance(worker.error, NotAvailable):  # a notice about the run, not a verdict
            shown = Text.assemble(("verify replay does not apply: ", "bold"), str(worker.error))
            shown.stylize("yellow")
        else:
            shown = Text(f"verify replay failed: {' '.join(str(worker.error).split())[:240]}")
            shown.stylize("red")
        self.query_one("#replay-verify", Static).update(shown)

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield ("Play / pause", "Play the events with the recorded pacing", self.action_play)
        yield ("Toggle pacing", "Recorded timing or fast", self.action_toggle_pacing)
        yield ("Verify replay", "Re-run offline and show the first divergence", self.action_verify)
        yield (
            "Jump to the first error",
            "Move to the first failing event",
            self.action_first_error,
        )
