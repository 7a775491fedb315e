"""A run as a waterfall: per turn, its model calls and tool calls with their start and end
in milliseconds from the run's start, calls that ran side by side on separate lanes, and the
turn's tokens (the provider's usage, else the estimate the loop counted, so the turns add
up to the run's totals).

    timeline = build_timeline(events)
    for turn in timeline.turns:
        for span in turn.spans: ...     # span.lane > 0: ran beside an earlier span
    lines = render_timeline(timeline, width=100)
    view = stored_timeline(store, run_id, home, start=100)   # turns 101-200 of a long run
    tokens_in, tokens_out = run_tokens(turn_summaries(store, run_id, model).values())
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

from agent_core.tokens import estimate_message
from traces.events import Error, Event, ModelRequest, ModelResponse, ToolEnd, ToolStart
from traces.prices import Prices, PricesError
from traces.text import bar_cells, short_ms
from traces.tree import run_duration_ms
from workbench.engine.recording.runs.window import TURN_WINDOW, TurnWindow

if TYPE_CHECKING:
    from traces.store import TraceStore
    from workbench.engine.views.outline import TurnSummary

SpanKind: TypeAlias = Literal["model", "tool"]


@dataclass(frozen=True)
class Span:
    kind: SpanKind
    label: str
    start_ms: float
    end_ms: float
    ok: bool
    lane: int = 0

    @property
    def duration_ms(self) -> float:
        return self.end_ms - self.start_ms


@dataclass
class TurnTimeline:
    turn: int
    start_ms: float
    end_ms: float
    input_tokens: int = 0
    output_tokens: int = 0
    spans: list[Span] = field(default_factory=list)

    @property
    def duration_ms(self) -> float:
        return self.end_ms - self.start_ms


@dataclass
class Timeline:
    run_id: str = ""
    model: str | None = None
    end_ms: float = 0.0  # the run's duration (`traces.tree.run_duration_ms`)
    turns: list[TurnTimeline] = field(default_factory=list)

    @property
    def input_tokens(self) -> int:
        return sum(turn.input_tokens for turn in self.turns)

    @property
    def output_tokens(self) -> int:
        return sum(turn.output_tokens for turn in self.turns)


def _usage(response: ModelResponse, key: str, estimate: int) -> int:
    """The provider's figure, else the estimate: what the loop counts against the budget."""
    value = (response.usage or {}).get(key)
    return int(value) if isinstance(value, int | float) else estimate


def _lanes(spans: list[Span]) -> list[Span]:
    """Give each span the lowest lane free at its start, so overlapping calls sit side by
    side; spans that follow one another share lane 0."""
    lane_ends: list[float] = []
    placed: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start_ms, s.kind != "model")):
        lane = next((i for i, end in enumerate(lane_ends) if end <= span.start_ms), None)
        if lane is None:
            lane = len(lane_ends)
            lane_ends.append(span.end_ms)
        else:
            lane_ends[lane] = span.end_ms
        placed.append(Span(span.kind, span.label, span.start_ms, span.end_ms, span.ok, lane))
    return placed


class _Builder:
    def __init__(self, origin: datetime) -> None:
        self.origin = origin
        self.turns: dict[int, TurnTimeline] = {}
        self.spans: dict[int, list[Span]] = {}
        # (turn, attempt) -> the request's offset and estimated prompt tokens
        self.requests: dict[tuple[int, int], tuple[float, int]] = {}
        self.tools: dict[str, tuple[float, ToolStart]] = {}

    def offset(self, event: Event) -> float:
        return (event.ts - self.origin).total_seconds() * 1000.0

    def turn(self, event: Event) -> TurnTimeline | None:
        if event.turn is None:
            return None
        at = self.offset(event)
        node = self.turns.get(event.turn)
        if node is None:
            node = self.turns[event.turn] = TurnTimeline(event.turn, at, at)
            self.spans[event.turn] = []
        node.start_ms = min(node.start_ms, at)
        node.end_ms = max(node.end_ms, at)
        return node

    def add(self, event: Event) -> None:
        node = self.turn(event)
        if node is None:
            return
        at = self.offset(event)
        spans = self.spans[node.turn]
        match event:
            case ModelRequest():
                self.requests[(node.turn, event.attempt)] = (at, event.estimated_tokens)
            case ModelResponse():
                start, estimate = self.requests.pop(
                    (node.turn, event.attempt), (at - event.latency_ms, 0)
                )
                label = "model" if event.attempt == 1 else f"model (attempt {event.attempt})"
                spans.append(Span("model", label, start, at, True))
                node.input_tokens += _usage(event, "prompt_tokens", estimate)
                answer = estimate_message(event.message)
                node.output_tokens += _usage(event, "completion_tokens", answer)
            case Error() if event.where == "model":
                attempt = event.attempt or 1
                request = self.requests.pop((node.turn, attempt), None)
                if request is not None:
                    label = f"model (attempt {attempt}): {event.kind}"
                    spans.append(Span("model", label, request[0], at, False))
            case ToolStart():
                self.tools[event.call_id] = (at, event)
            case ToolEnd():
                opened = self.tools.pop(event.call_id, None)
                start = opened[0] if opened is not None else at - event.duration_ms
                # Parallel calls are recorded one after another as the loop awaits them, so
                # the call's own duration says when it finished better than tool_end's time.
                end = min(at, start + event.duration_ms) if event.duration_ms > 0 else at
                spans.append(Span("tool", event.name, start, end, event.ok))
            case _:
                pass

    def finish(self, end_ms: float) -> list[TurnTimeline]:
        # What never finished (a killed run, a timeout) runs to the end of the trace.
        for (turn, attempt), (start, _) in self.requests.items():
            label = "model" if attempt == 1 else f"model (attempt {attempt})"
            self.spans[turn].append(Span("model", label + ": no answer", start, end_ms, False))
        for start, tool in self.tools.values():
            if tool.turn is not None:
                self.spans[tool.turn].append(
                    Span("tool", tool.name + ": no result", start, end_ms, False)
                )
        turns = [self.turns[number] for number in sorted(self.turns)]
        for node in turns:
            node.spans = _lanes(self.spans[node.turn])
            if node.spans:
                node.end_ms = max(node.end_ms, max(span.end_ms for span in node.spans))
        return turns


def build_timeline(events: Sequence[Event], end_ms: float | None = None) -> Timeline:
    """The run's turns and calls as offsets from its first event (`run_start`). `end_ms`:
    the run's duration when `events` are some of its turns (a call they leave unfinished
    runs to the run's end), else the duration of `events`."""
    ordered = sorted(events, key=lambda e: e.seq)
    if not ordered:
        return Timeline()
    builder = _Builder(ordered[0].ts)
    for event in ordered:
        builder.add(event)
    if end_ms is None:
        end_ms = run_duration_ms(ordered)
    start = ordered[0]
    model = getattr(start, "model", None)
    return Timeline(start.run_id, model, end_ms, builder.finish(end_ms))


# The event types a timeline is built from (a run's chunks and frames are left in the store).
TIMELINE_TYPES = [
    "run_start",
    "model_request",
    "model_response",
    "error",
    "tool_start",
    "tool_end",
    "run_end",
]


@dataclass(frozen=True)
class PricedTimeline:
    """A timeline with the home's prices to cost its turns, or why they could not be read;
    `window` says which turns of a longer run it holds, and `run_tokens` (once counted) are
    then the whole run's."""

    timeline: Timeline
    prices: Prices
    problem: str | None = None  # why <home>/prices.toml could not be read
    window: TurnWindow | None = None  # None: the timeline holds every turn
    run_tokens: tuple[int, int] | None = None  # the whole run's in and out (`run_tokens`)

    @property
    def tokens(self) -> tuple[int, int] | None:
        """The whole run's input and output tokens; None while a window's are not counted."""
        if self.window is None:
            return self.timeline.input_tokens, self.timeline.output_tokens
        return self.run_tokens

    @property
    def turn_count(self) -> int:
        """How many turns the run has."""
        return len(self.window.turn_numbers) if self.window else len(self.timeline.turns)

    def cost(self, input_tokens: int, output_tokens: int) -> float | None:
        """What these tokens cost on the run's model; None when it has no price."""
        if not self.prices or self.timeline.model is None:
            return None
        return self.prices.cost(self.timeline.model, input_tokens, output_tokens)


def _load_prices(home: Path) -> tuple[Prices, str | None]:
    try:
        return Prices.load(home), None
    except PricesError as exc:
        return Prices(), str(exc)


def priced_timeline(events: Sequence[Event], home: Path) -> PricedTimeline:
    """The timeline of `events` priced from `<home>/prices.toml`; a bad file is named, and
    the timeline shown without costs."""
    prices, problem = _load_prices(home)
    return PricedTimeline(build_timeline(events), prices, problem)


def stored_timeline(
    store: TraceStore, run_id: str, home: Path, start: int = 0, size: int = TURN_WINDOW
) -> PricedTimeline:
    """The timeline of the stored run's turns from position `start` on, `size` of them
    (a `TurnWindow`), priced from `<home>/prices.toml`. Only those turns' events are read,
    and the run's own (its start and end), so the duration is the whole run's; the whole
    tokens of a run of more turns are `run_tokens` of its turn summaries, asked for apart."""
    window = TurnWindow(tuple(store.turn_numbers(run_id)), start, size)
    events = store.events(run_id, types=TIMELINE_TYPES, turns=window.turns)
    if window.whole:
        return priced_timeline(events, home)
    timeline = build_timeline(events)
    if not any(event.type == "run_end" for event in events):
        # A trace cut off before its end: its last event may sit in a turn not shown.
        timeline.end_ms = max(timeline.end_ms, store.run(run_id).duration_ms or 0.0)
    prices, problem = _load_prices(home)
    return PricedTimeline(timeline, prices, problem, window)


def run_tokens(summaries: Iterable[TurnSummary]) -> tuple[int, int]:
    """The whole run's input and output tokens from its turns at a glance (the outline's
    `turn_summaries`, one aggregate query of the store): per turn the provider's usage,
    else the loop's estimate of the prompt (an answer without usage counts no output here)."""
    tokens_in = tokens_out = 0
    for turn in summaries:
        tokens_in += turn.input_tokens if turn.input_tokens is not None else turn.estimated_tokens
        tokens_out += turn.output_tokens or 0
    return tokens_in, tokens_out


def _bar(span_start: float, span_end: float, total: float, width: int) -> str:
    """The span drawn on a `width`-cell track of `total` ms."""
    first, last = bar_cells(span_start, span_end, total, width)
    return " " * first + "█" * (last - first) + " " * (width - last)


def render_timeline(
    timeline: Timeline, width: int = 100, cost: Callable[[int, int], str] | None = None
) -> list[str]:
    """Text waterfall: a line per turn (duration, tokens) and one per call with its bar."""
    label_width = 28
    track = max(10, width - label_width - 12)
    total = max(timeline.end_ms, 1.0)
    lines = [f"timeline of run {timeline.run_id[:12]}: {short_ms(timeline.end_ms)}"]
    for turn in timeline.turns:
        tokens = f"{turn.input_tokens} in / {turn.output_tokens} out tokens"
        if cost is not None:
            tokens += cost(turn.input_tokens, turn.output_tokens)
        lines.append(
            f"turn {turn.turn}  {short_ms(turn.start_ms)} → {short_ms(turn.end_ms)} "
            f"({short_ms(turn.duration_ms)}), {tokens}"
        )
        for span in turn.spans:
            indent = "  " + "  " * span.lane + ("∥ " if span.lane else "")
            mark = "" if span.ok else " ✗"
            label = (indent + span.label + mark)[:label_width].ljust(label_width)
            bar = _bar(span.start_ms, span.end_ms, total, track)
            lines.append(f"{label}|{bar}| {short_ms(span.duration_ms):>9}")
    return lines
