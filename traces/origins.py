"""Where a run came from: the `run_start.origin` values, and the short labels lists show.

The runs lists (the TUI's kind column, `workbench runs`) show a short label for a long
origin; `workbench runs --kind` and the TUI's kind filter take the origin values, and the
CLI takes the labels as aliases. Kept apart from `traces.events` so a command's parser can
name the kinds without loading the event models (tests/test_startup.py holds `RUN_KINDS`
equal to `traces.events.RunOrigin`).
"""

from __future__ import annotations

RUN_KINDS: tuple[str, ...] = (
    "agent",
    "fork",
    "regression_sample",
    "mcp_session",
    "captured",
    "imported",
)

# The label a list shows for an origin; an origin not named here shows as itself.
KIND_LABELS: dict[str, str] = {
    "agent": "run",
    "regression_sample": "sample",
    "mcp_session": "mcp",
}


def kind_label(origin: str) -> str:
    return KIND_LABELS.get(origin, origin)


def judged_status(judged: str) -> str:
    """What a list shows as a regression sample's status: its case's verdict (`RunRow.judged`),
    not how its run ended (a sample that stops at max_turns by design passed)."""
    return f"case {judged}"


# The colour of a sample's status: the run status it reads like.
JUDGED_LIKE = {"passed": "completed", "failed": "error", "error": "error"}


def kind_from_name(name: str) -> str | None:
    """The origin a kind name means: an origin value itself, or a list's label for one."""
    if name in RUN_KINDS:
        return name
    return next((origin for origin, label in KIND_LABELS.items() if label == name), None)
