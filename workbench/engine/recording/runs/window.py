"""A window of a long run's turns: which of them a view shows, and the windows around it.

A view of a run of thousands of turns (the TUI's timeline and chain comparison) reads only
the events of the turns its window holds, and the run's own (`run_start`, `run_end`), from
the store: `store.events(run_id, turns=window.turns)`, however long the run.

    window = TurnWindow(tuple(store.turn_numbers(run_id)), start=100)
    window.shown          # (101, 200): the first and last turn it holds
    window.moved(1)       # 200: where the next window starts; None after the last
"""

from __future__ import annotations

from dataclasses import dataclass

# How many turns a window holds (`workbench show` pages a long run's turns alike).
TURN_WINDOW = 100


@dataclass(frozen=True)
class TurnWindow:
    """`size` of the run's turns from position `start` in `turn_numbers` (every turn the
    run has, in order; a fork's start at its fork turn)."""

    turn_numbers: tuple[int, ...]
    start: int = 0
    size: int = TURN_WINDOW

    def __post_init__(self) -> None:
        # A start past the last turn shows the last window there is.
        last = max(len(self.turn_numbers) - 1, 0)
        object.__setattr__(self, "start", max(0, min(self.start, last)))

    @property
    def whole(self) -> bool:
        """Every turn of the run fits in the window."""
        return self.start == 0 and len(self.turn_numbers) <= self.size

    @property
    def shown(self) -> tuple[int, int] | None:
        """The first and last turn the window holds; None for a run of no turns."""
        held = self.turn_numbers[self.start : self.start + self.size]
        return (held[0], held[-1]) if held else None

    @property
    def turns(self) -> tuple[int, int] | None:
        """What `TraceStore.events(turns=...)` reads: None (every event) when whole."""
        return None if self.whole else self.shown

    def moved(self, step: int) -> int | None:
        """Where the window `step` windows on starts; None past either end of the run."""
        start = self.start + step * self.size
        return start if 0 <= start < len(self.turn_numbers) else None
