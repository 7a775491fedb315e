"""What a home without runs says to do next, the same in `workbench runs` and the TUI's
runs list: the commands that bring runs in, each with what it is for."""

from __future__ import annotations

# (command, what it gives), in the order a new user would try them.
GET_RUNS: tuple[tuple[str, str], ...] = (
    ("workbench demo", "example runs and a suite, offline"),
    ('workbench run "TASK" --root DIR', "your task, run by the built-in agent"),
    ("workbench proxy --upstream URL", "record any agent through it"),
    ("workbench import claude-code|codex", "read coding agents' sessions"),
    ("workbench ingest PATH", "traces recorded elsewhere"),
)


def no_runs_yet(home: str) -> str:
    """The lines that say a home has no runs and how to get some."""
    width = max(len(command) for command, _ in GET_RUNS)
    steps = [f"  {command:<{width}}  {what}" for command, what in GET_RUNS]
    return "\n".join([f"No runs yet in {home}. To get some:", *steps])
