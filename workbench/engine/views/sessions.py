"""A session as every front end shows it: its totals and its runs in the order they ran
(`workbench sessions` / `show --session`, the TUI's session view, mcp-serve)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from traces.store import RunQuery, RunRow, SessionRow, TraceStore, UnknownRunError
from traces.text import short_ms

# More runs than a session view lists (a long-lived session of a coding agent).
SESSION_RUNS = 500


@dataclass(frozen=True)
class SessionView:
    session: SessionRow
    runs: list[RunRow]  # the first started first

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session.to_json(), "runs": [row.to_json() for row in self.runs]}


def session_view(store: TraceStore, prefix: str) -> SessionView:
    """The session `prefix` names (a whole id or the start of one); raises UnknownRunError
    or AmbiguousRunError with one line saying why."""
    session = store.resolve_session(prefix)
    rows = store.sessions(session=session, limit=1)
    if not rows:  # resolved a moment ago; gone only if the store was rebuilt meanwhile
        raise UnknownRunError(f"no session '{prefix}'; `workbench sessions` lists them")
    runs = store.runs(
        limit=SESSION_RUNS, where=RunQuery(session=session), sort="started_at", descending=False
    )
    return SessionView(rows[0], runs)


def statuses_text(statuses: dict[str, int]) -> str:
    """How a session's runs ended: `2 completed, 1 error`."""
    return ", ".join(f"{count} {status}" for status, count in statuses.items())


def session_summary(row: SessionRow) -> str:
    """One line of a session's totals."""
    return (
        f"{row.runs} run{'s' if row.runs != 1 else ''} · {row.turns} turns · "
        f"{row.tool_calls} tool calls · {row.total_tokens:,} tokens · "
        f"{short_ms(row.duration_ms)} · {statuses_text(row.statuses)}"
    )
