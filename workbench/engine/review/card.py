"""What the review screen shows of a run, to judge it in seconds: its row (task, status and
reason, final answer), its first failure, its tool calls in brief and the annotations it
has. A few small reads of the store, however long the run.

    card = run_card(store, run_id)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from traces.events import Event, ToolEnd, ToolStart

if TYPE_CHECKING:
    from traces.store import RunRow, TraceStore

# The tool calls a card lists (the first ones): enough to see what the run did.
CARD_CALLS = 12


@dataclass(frozen=True)
class CallBrief:
    """A tool call in one line's worth: its name, arguments as sent, how it went."""

    turn: int | None
    name: str
    arguments: str
    ok: bool | None  # None: it never ended
    outcome: str  # its error, else its result


@dataclass(frozen=True)
class RunCard:
    row: RunRow
    failure: Event | None  # the first error, failed call or bad arguments, else a bad end
    calls: list[CallBrief]
    annotations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def more_calls(self) -> int:
        return max(self.row.tool_calls - len(self.calls), 0)


def run_card(store: TraceStore, run_id: str) -> RunCard:
    row = store.run(run_id)
    events = store.events(run_id, limit=CARD_CALLS * 2, types=["tool_start", "tool_end"])
    return RunCard(row, store.first_failure(run_id), briefs(events), store.annotations(run_id))


def briefs(events: list[Event]) -> list[CallBrief]:
    """Each tool call's start with its end (when it is among `events`), in order."""
    ends = {event.call_id: event for event in events if isinstance(event, ToolEnd)}
    found = []
    for event in events:
        if not isinstance(event, ToolStart):
            continue
        end = ends.get(event.call_id)
        outcome = ""
        if end is not None:  # as `workbench failures` reads a failed call: error, then result
            outcome = f"{end.error}: {end.result}" if end.error else end.result
        ok = None if end is None else end.ok
        found.append(CallBrief(event.turn, event.name, event.arguments_raw, ok, outcome))
    return found[:CARD_CALLS]
