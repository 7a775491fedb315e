"""Which runs `workbench compare` compares: runs given by id, every run of one run's task,
a suite case's samples, the runs with a label, or those a proxy captured under one name.

    group = group_of(store, task="3f2a")     # Group("the runs of the task of 3f2a…", [...])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from traces.store.steps import case_runs, labelled_runs, named_runs, task_runs

if TYPE_CHECKING:
    from traces.store import TraceStore


class GroupError(ValueError):
    """A group that names no runs (a label, name or case with none): one line."""


@dataclass(frozen=True)
class Group:
    """Runs to compare, and what named them (for the heading)."""

    named: str  # "3 runs given", "the runs of the task of r1", ...
    run_ids: list[str]


def group_of(
    store: TraceStore,
    *,
    runs: list[str] | None = None,
    task: str | None = None,
    case: str | None = None,
    label: str | None = None,
    name: str | None = None,
) -> Group:
    """The runs named one way: ids (or prefixes), all runs of `task`'s task (that run's
    task fingerprint), a suite case's samples (`SUITE:CASE`, the suite's newest stored
    run), the runs labelled `label`, or those a proxy captured under `name`. An id that
    names no run raises `UnknownRunError`; a way that names none, `GroupError`."""
    if runs:
        found = list(dict.fromkeys(store.resolve_run(ref) for ref in runs))
        return Group(f"{len(found)} run{'s' if len(found) != 1 else ''} given", found)
    if task is not None:
        run_id = store.resolve_run(task)
        return Group(f"the runs of the task of {run_id[:12]}", task_runs(store, run_id))
    if case is not None:
        suite, _, case_id = case.rpartition(":")
        if not suite or not case_id:
            raise GroupError(
                f"--case takes SUITE:CASE (a suite's name and a case id); got {case!r}"
            )
        found = case_runs(store, suite, case_id)
        if not found:
            raise GroupError(
                f"no samples of case {case_id!r} in a stored run of suite {suite!r}; "
                "`workbench test --history` lists the suite runs"
            )
        return Group(f"the samples of case {case_id} of suite {suite}", found)
    if label is not None:
        found = labelled_runs(store, label)
        if not found:
            raise GroupError(f"no run is labelled {label!r}; `workbench note` labels runs")
        return Group(f"the runs labelled {label}", found)
    if name is not None:
        found = named_runs(store, name)
        if not found:
            raise GroupError(
                f"no run named {name!r} (captured with the header X-Workbench-Run: {name})"
            )
        return Group(f"the runs named {name}", found)
    raise GroupError("name the runs to compare: RUN…, --task RUN, --case, --label or --run-name")
