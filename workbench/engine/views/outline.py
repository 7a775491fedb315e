"""What a run screen shows before anything is expanded, and where a run first went wrong;
both read only the few events they need from the store, however long the run.

    outline = run_outline(store, run_id, prices)   # header row, first and last events
    failure = first_failure(store, run_id)         # what "jump to the first error" stops at
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from traces.events import Error, Event, RunEnd, ToolEnd, ToolStart

if TYPE_CHECKING:  # render.py takes `event_is_failure` from here without loading the store
    from traces.prices import Prices
    from traces.store import RunRow, TraceStore


# A turn at a glance, before its events are read: `error` (an error event, a failed tool
# call or unparsable arguments), `not_run` (a call it asked for never started), `running`
# (a call or the model had not answered when the trace ends), else `ok`.
TurnGlance: TypeAlias = Literal["ok", "error", "not_run", "running"]


@dataclass(frozen=True)
class TurnSummary:
    """One turn's figures, from one aggregate query over the run (`turn_summaries`)."""

    turn: int
    status: TurnGlance
    wall_ms: float
    input_tokens: int | None  # the provider's usage; None when it gave none
    output_tokens: int | None
    estimated_tokens: int  # the loop's estimate of what it sent
    tools_started: int
    tools_not_run: int
    answered: bool  # a model answer without tool calls
    last_error: str | None  # the kind of the turn's last error
    cost: str = ""  # what its tokens cost, when <home>/prices.toml prices the model

    @property
    def tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


def _summary(row: tuple[Any, ...], cost: str) -> TurnSummary:
    (turn, wall_ms, responses, prompt, completion, estimated, asked, started, ended) = row[:9]
    failed, bad_arguments, errors, last_error = row[9:]
    not_run = max(int(asked or 0) - int(started or 0), 0)
    status: TurnGlance = "ok"
    if failed or bad_arguments or errors:
        status = "error"
    elif not_run:
        status = "not_run"
    elif started > ended or not responses:
        status = "running"
    return TurnSummary(
        turn=int(turn),
        status=status,
        wall_ms=float(wall_ms or 0.0),
        input_tokens=None if prompt is None else int(prompt),
        output_tokens=None if completion is None else int(completion),
        estimated_tokens=int(estimated or 0),
        tools_started=int(started),
        tools_not_run=not_run,
        answered=bool(responses) and not asked,
        last_error=last_error,
        cost=cost,
    )


def turn_summaries(
    store: TraceStore, run_id: str, model: str | None, prices: Prices | None = None
) -> dict[int, TurnSummary]:
    """Every turn of the run at a glance, in one query whatever the run's length."""
    found: dict[int, TurnSummary] = {}
    for row in store.turn_summaries(run_id):
        cost = ""
        if prices and model and (row[3] is not None or row[4] is not None):
            cost = prices.format(prices.cost(model, int(row[3] or 0), int(row[4] or 0)))
        found[int(row[0])] = _summary(row, cost)
    return found


@dataclass(frozen=True)
class Outline:
    row: RunRow
    start: Event | None
    end: Event | None
    turns: int  # how many turns the run has, numbered from first_turn
    events: int
    cost: str = ""  # what the run's tokens cost, when <home>/prices.toml prices its model
    first_turn: int = 1  # a fork's turns go on from its parent's: the first is the fork turn
    prices_problem: str = ""  # why <home>/prices.toml could not be read (no cost shown)
    summaries: dict[int, TurnSummary] = field(default_factory=dict)  # by turn number
    prices: Prices | None = None  # the home's prices, to cost each model call
    # The annotations on the run, its turns and calls (`TraceStore.annotations`), oldest first.
    notes: list[dict[str, Any]] = field(default_factory=list)

    def cost_of(self, input_tokens: int, output_tokens: int) -> str:
        """`$0.0012` for these tokens on the run's model; empty when it has no price."""
        if not self.prices or not self.row.model:
            return ""
        return self.prices.format(self.prices.cost(self.row.model, input_tokens, output_tokens))

    @property
    def last_turn(self) -> int:
        return self.first_turn + self.turns - 1


def run_outline(store: TraceStore, run_id: str, prices: Prices | None = None) -> Outline:
    """The run's header row, its first and last events and how its turns are numbered;
    `UnknownRunError` when the store has no such run."""
    row = store.run(run_id)
    total = int(store.count_events(run_id))
    first = list(store.events(run_id, 0, 1))
    tail = list(store.events(run_id, max(total - 3, 0), 3))
    end = tail[-1] if tail and tail[-1].type == "run_end" else None
    first_call = list(store.events(run_id, 0, 1, ["model_request"]))
    first_turn = first_call[0].turn if first_call and first_call[0].turn else 1
    last_seen = max((e.turn for e in tail if e.turn is not None), default=0)
    last_turn = max(first_turn + int(row.turns or 0) - 1, last_seen)
    turns = max(last_turn - first_turn + 1, 0)
    cost = ""
    if prices is not None and isinstance(end, RunEnd):
        totals = end.totals
        amount = prices.cost(row.model or "", totals.input_tokens, totals.output_tokens)
        cost = prices.format(amount)
    start = first[0] if first else None
    summaries = turn_summaries(store, run_id, row.model, prices)
    notes = store.annotations(run_id)
    return Outline(
        row,
        start,
        end,
        turns,
        total,
        cost,
        first_turn,
        summaries=summaries,
        prices=prices,
        notes=notes,
    )


def event_is_failure(event: Event) -> bool:
    """An error, a failed tool call or unparsable arguments, or a run that did not complete."""
    match event:
        case Error():
            return True
        case ToolEnd():
            return not event.ok
        case ToolStart():
            return event.parse_error is not None
        case RunEnd():
            return event.status != "completed"
        case _:
            return False


def first_failure(store: TraceStore, run_id: str) -> Event | None:
    """The run's first event that `event_is_failure`: one query of the store, however long
    the run (`TraceStore.first_failure` asks the same in SQL; a test holds them equal)."""
    return store.first_failure(run_id)
