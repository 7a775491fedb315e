"""What a run screen shows before anything is expanded, and where a run first went wrong;
both read only the few events they need from the store, however long the run.

    outline = run_outline(store, run_id, prices)   # header row, first and last events
    failure = first_failure(store, run_id)         # what "jump to the first error" stops at
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from traces.events import Error, Event, RunEnd, ToolEnd, ToolStart

if TYPE_CHECKING:  # render.py takes `event_is_failure` from here without loading the store
    from traces.store import RunRow, TraceStore
    from workbench.engine.views.cost import Prices


@dataclass(frozen=True)
class Outline:
    row: RunRow
    start: Event | None
    end: Event | None
    turns: int  # how many turns the run has, numbered from first_turn
    events: int
    cost: str = ""  # what the run's tokens cost, when <home>/prices.toml prices its model
    first_turn: int = 1  # a fork's turns go on from its parent's: the first is the fork turn

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
    return Outline(row, start, end, turns, total, cost, first_turn=first_turn)


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
