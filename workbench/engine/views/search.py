"""Find runs by what they said and did: the task, the model's messages, tool names,
arguments and results, errors and final answers, matched in DuckDB (`TraceStore.search`).

    hits = search(store, "report.py")                # newest runs first
    hits = search(store, "timeout", run_id=run_id)   # within one run, in event order
    page = search_run(store, "timeout", run_id, 200)  # the run's 201st matching event on
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, TypeAlias

from traces.store import TraceStore
from traces.text import one_line

SearchPlace: TypeAlias = Literal[
    "task",
    "message",
    "tool_name",
    "tool_arguments",
    "tool_result",
    "error",
    "answer",
    "last_text",
]
# What a search looks in, as a user reads it beside "nothing found".
SEARCHED = "searched tasks, messages, tool names, arguments and results, errors and answers"


# How many matching events of a run `search_run` reads at a time.
RUN_PAGE = 100


@dataclass(frozen=True)
class SearchHit:
    run_id: str
    turn: int | None
    seq: int
    where: str  # a SearchPlace: "task" | "message" | "tool_name" | "tool_arguments" | ...
    snippet: str  # the text around the first match, on one line

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RunMatches:
    """A page of one run's matching events: `hits[0]` is match number `offset` (0-based)
    of the run's `total`; one hit per event."""

    text: str
    total: int
    offset: int
    hits: list[SearchHit]

    def hit(self, index: int) -> SearchHit | None:
        """Match number `index` of the run's, when this page holds it."""
        return self.hits[index - self.offset] if 0 <= index - self.offset < len(self.hits) else None


def _whole_words(snippet: str, text: str) -> str:
    """The snippet without the word halves its cut ends left, keeping the match itself."""
    lowered, wanted = snippet.lower(), text.lower()
    found = lowered.find(wanted)
    if snippet.startswith("…"):
        space = snippet.find(" ", 1, max(found, 1))
        if space != -1:
            snippet = "…" + snippet[space:]
    if snippet.endswith("…"):
        found = snippet.lower().find(wanted)
        space = snippet.rfind(" ", found + len(wanted) if found != -1 else 0, len(snippet) - 1)
        if space != -1:
            snippet = snippet[:space] + " …"
    return snippet


def search(
    store: TraceStore, text: str, *, run_id: str | None = None, limit: int = 100
) -> list[SearchHit]:
    """Every field containing `text`, ignoring case; an empty `text` finds nothing."""
    if not text.strip():
        return []
    return _hits(store.search(text, run_id=run_id, limit=limit), text)


def search_run(
    store: TraceStore, text: str, run_id: str, offset: int = 0, limit: int = RUN_PAGE
) -> RunMatches:
    """The run's events containing `text`, counted, and `limit` of them from the
    `offset`th on (in seq order): a long run is searched without holding its matches."""
    if not text.strip():
        return RunMatches(text, 0, 0, [])
    total, rows = store.search_run(text, run_id, offset, limit)
    return RunMatches(text, total, offset, _hits(rows, text))


def _hits(rows: list[tuple[str, int | None, int, str, str]], text: str) -> list[SearchHit]:
    return [
        SearchHit(run, turn, seq, where, _whole_words(one_line(snippet), text))
        for run, turn, seq, where, snippet in rows
    ]
