"""One `workbench test` from start to end, shared by the CLI and the pytest plugin: open the
suite's tools, load the baseline, run the samples, store results, save a baseline.

Anything that stops the suite from running is a `SuiteError` (exit code 2); failing cases
are results (exit code 1), not errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agent_core.model.base import ChatModel
from traces.home import RedactionConfigError, redaction_patterns, traces_dir
from traces.store import StoreError
from traces.store.regress import RegressTables
from workbench.engine.recording.fork.tool_policy import (
    PolicyError,
    PolicyRule,
    ToolPolicy,
    load_home_rules,
)
from workbench.engine.regress.context import RecordingError
from workbench.engine.regress.report import failure_details, store_rows
from workbench.engine.regress.runner import (
    Baseline,
    Progress,
    RegressOptions,
    SuiteResult,
    run_suite,
)
from workbench.engine.regress.sources import ToolSourceError, open_tools
from workbench.engine.regress.suite import Suite, SuiteError


class BaselineStore(Protocol):
    """What a session needs from `traces.store.regress.RegressTables`."""

    def save_run(
        self, run: dict[str, Any], cases: list[dict[str, Any]], samples: list[dict[str, Any]]
    ) -> None: ...

    def save_baseline(self, suite: str, name: str, suite_run_id: str) -> None: ...

    def load_baseline(self, suite: str, name: str | None = None) -> dict[str, Any] | None: ...


@dataclass
class SuiteRequest:
    suite: Suite
    home: Path
    root: Path = Path(".")
    samples: int | None = None
    concurrency: int = 4
    tool_descriptions: dict[str, str] = field(default_factory=dict)
    builtin_tools: list[str] | None = None  # overrides the suite's builtin_tools
    params: dict[str, Any] = field(default_factory=dict)
    model_timeout_s: float = 60.0
    baseline: str | None = None  # compare pass rates with this stored baseline
    save_baseline: str | None = None
    secrets: list[str | None] = field(default_factory=list)  # kept out of the traces
    # `--tool-policy` rules; they come before the suite's [tool_policy] and the home's file.
    tool_policy: list[PolicyRule] = field(default_factory=list)


@dataclass
class SuiteOutcome:
    result: SuiteResult
    details: dict[str, list[str]]  # case id -> failure lines (failing/regressed cases only)
    diff_base: str | None  # what the schema diffs compare with
    saved_baseline: str | None = None


def open_results_store(home: Path) -> RegressTables:
    """The home folder's store, for results and baselines; close it when done."""
    try:
        return RegressTables.for_home(home)
    except StoreError as exc:
        raise SuiteError(str(exc)) from None


def _baseline(row: dict[str, Any]) -> Baseline:
    return Baseline(
        name=row["name"],
        suite=row["suite"],
        pass_rates=dict(row["pass_rates"]),
        tool_schemas=list(row["tool_schemas"]),
        created=str(row.get("created") or ""),
        model=str(row.get("model") or ""),
    )


async def run_suite_request(
    request: SuiteRequest,
    model: ChatModel,
    store: BaselineStore | None,
    *,
    progress: Progress | None = None,
) -> SuiteOutcome:
    suite = request.suite
    baseline: Baseline | None = None
    if request.baseline is not None:
        row = store.load_baseline(suite.name, request.baseline) if store else None
        if row is None:
            raise SuiteError(
                f"no baseline {request.baseline!r} for suite {suite.name!r}; save one first "
                f"with --save-baseline {request.baseline}"
            )
        baseline = _baseline(row)
    # Without --baseline, failures are still shown against the newest saved baseline.
    diff_from = baseline
    if diff_from is None and store is not None:
        latest = store.load_baseline(suite.name)
        diff_from = _baseline(latest) if latest else None
    _check_redaction(request)
    options = RegressOptions(
        home=request.home,
        samples=request.samples,
        concurrency=request.concurrency,
        tool_descriptions=dict(request.tool_descriptions),
        recording_dirs=[traces_dir(request.home)],
        params=dict(request.params),
        model_timeout_s=request.model_timeout_s,
        baseline=baseline,
        secrets=list(request.secrets),
        tool_policy=suite_policy(request),
    )
    reference = suite.tools_path()
    builtins = request.builtin_tools
    if builtins is None and suite.builtin_tools is not None:
        builtins = list(suite.builtin_tools)
    if reference is None and not builtins and not any(case.from_run for case in suite.cases):
        raise SuiteError(f'{suite.path}: [suite] names no tools; add tools = "builtin"')
    try:
        async with open_tools(reference, root=request.root, builtins=builtins) as toolsets:
            result = await run_suite(suite, model, toolsets, options, progress=progress)
    except (ToolSourceError, RecordingError) as exc:
        raise SuiteError(str(exc)) from None
    if result.all_errored:
        first = next(s.error for c in result.cases for s in c.samples if s.error)
        raise SuiteError(
            f"suite {suite.name} could not run: every sample failed: {first} "
            "(check --base-url and --model)"
        )
    saved = None
    if store is not None:
        store.save_run(*store_rows(result))
        if request.save_baseline:
            store.save_baseline(suite.name, request.save_baseline, result.suite_run_id)
            saved = request.save_baseline
    label = f"baseline {diff_from.name!r}" if diff_from else None
    details = failure_details(result, diff_from.tool_schemas if diff_from else None, label)
    return SuiteOutcome(result, details, label, saved)


def suite_policy(request: SuiteRequest) -> ToolPolicy:
    """The samples' side-effect policy: the request's rules, the suite's, the home's."""
    try:
        home = load_home_rules(request.home)
    except PolicyError as exc:
        raise SuiteError(str(exc)) from None
    return ToolPolicy.layered(cli=request.tool_policy, suite=request.suite.tool_policy, home=home)


def _check_redaction(request: SuiteRequest) -> None:
    # Each sample's trace reads the patterns again; a bad one is one line before any runs.
    try:
        redaction_patterns(request.home)
    except RedactionConfigError as exc:
        raise SuiteError(str(exc)) from None
