"""Suite runs as the store keeps them (`traces.store.regress`): each with its cases, and the
tool schemas a suite run used against its baseline's. What the TUI's regression screen reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from traces.schema_diff import ToolSchemaDiff, diff_tool_schemas
from traces.store.regress import RegressTables


class NoBaselineError(LookupError):
    """The suite has no stored baseline to compare a run with; says how to save one."""


@dataclass(frozen=True)
class SuiteRun:
    run: dict[str, Any]  # a row of RegressTables.runs()
    cases: list[dict[str, Any]]  # rows of RegressTables.cases()

    @property
    def suite_run_id(self) -> str:
        return str(self.run["suite_run_id"])


@dataclass(frozen=True)
class BaselineTools:
    """The baseline's tool schemas against a suite run's, and their diff."""

    baseline: str  # the baseline's name
    before: list[dict[str, Any]]
    after: list[dict[str, Any]]
    diff: ToolSchemaDiff


def stored_suite_runs(tables: RegressTables | None, limit: int = 50) -> list[SuiteRun]:
    """Stored suite runs, newest first, each with its cases; none without the tables."""
    if tables is None:
        return []
    return [SuiteRun(run, tables.cases(run["suite_run_id"])) for run in tables.runs(limit=limit)]


def baseline_tools(
    tables: RegressTables | None, suite: str, baseline: str | None, suite_run_id: str
) -> BaselineTools:
    """The tools of `baseline` (the suite's latest when None) against the suite run's."""
    base = tables.load_baseline(suite, baseline) if tables is not None else None
    if tables is None or base is None:
        raise NoBaselineError(
            f"suite {suite} has no baseline to compare with; save one with "
            "`workbench test --save-baseline`"
        )
    before = list(base["tool_schemas"])
    after = tables.run_tool_schemas(suite_run_id)
    return BaselineTools(str(base["name"]), before, after, diff_tool_schemas(before, after))
