"""`workbench why RUN`: a failed run's candidate causes, each verified by a counterfactual.

    report = explain(store, home, "3f9a", WhyOptions(samples=5), prices, serve=served_model)
    report_lines(report); report_markdown(report); report.to_json()  # why_text

The candidates come from the run's events and the runs of its task (`candidates`); those a
fork can test are tested (`verify`), and the causes are ranked by what the forks showed:
a fix that flips the outcome first, then the leads no fork could settle, then the fixes
that changed nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traces.store import RunQuery
from workbench.engine.analysis.candidates import (
    KIND_ORDER,
    Candidate,
    TaskRuns,
    candidates,
    newest_before,
)
from workbench.engine.analysis.compare import left_path
from workbench.engine.analysis.verify import (
    ServeRecorded,
    Verification,
    Verifier,
    suffix_model,
)
from workbench.engine.recording.running.service import ModelSettings
from workbench.engine.recording.runs.load import load_recording

if TYPE_CHECKING:
    from traces.prices import Prices
    from traces.store import TraceStore

# How many passing runs of the task are read to compare with (the newest).
PASSING_READ = 20
_VERDICT_RANK = ["fixes", "sometimes", "needs_model", "not_verified", "not_testable", "no_effect"]


@dataclass(frozen=True)
class WhyOptions:
    samples: int = 3
    settings: ModelSettings = field(default_factory=ModelSettings)
    max_cost: float | None = None
    allow_live_tools: bool = False  # else the home's tool policy: nothing runs live but reads
    verify: bool = True  # False: the candidates only, no fork


@dataclass(frozen=True)
class Cause:
    candidate: Candidate
    verification: Verification

    def to_json(self) -> dict[str, Any]:
        c = self.candidate
        return {
            "kind": c.kind,
            "title": c.title,
            "evidence": [e.to_json() for e in c.evidence],
            "fix": c.fix.to_json() if c.fix is not None else None,
            "verification": self.verification.to_json(),
        }


@dataclass(frozen=True)
class WhyReport:
    run_id: str
    status: str
    reason: str | None
    task_fingerprint: str | None
    passing_runs: list[str]  # of its task, newest first
    model: str  # what the forks continued with
    causes: list[Cause]  # ranked
    spent: float | None = None  # on live calls, when priced

    @property
    def failed(self) -> bool:
        return self.status != "completed"

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "reason": self.reason,
            "nothing_to_explain": not self.failed,
            "task_fingerprint": self.task_fingerprint,
            "passing_runs": self.passing_runs,
            "model": self.model,
            "spent": self.spent,
            "causes": [cause.to_json() for cause in self.causes],
            "forks": [run for cause in self.causes for run in cause.verification.forks],
        }


def explain(
    store: TraceStore,
    home: Path,
    run_ref: str,
    options: WhyOptions,
    prices: Prices,
    *,
    serve: ServeRecorded | None = None,
    on_progress: Callable[[str], object] | None = None,
) -> WhyReport:
    """Why run `run_ref` (an id or unique prefix: `UnknownRunError` when none) failed: a
    report with no causes when it did not fail."""
    row = store.run(store.resolve_run(run_ref))
    failing = load_recording(row.run_id, home)
    if row.status == "completed":
        return WhyReport(row.run_id, row.status, row.reason, row.task_fingerprint, [], "none", [])
    runs = _task_runs(store, home, failing, row.task_fingerprint)
    # The departure counts results: a result unlike the passing runs' is one a mock tests.
    left = left_path(store, row.run_id, results=True)
    found = candidates(runs, store.first_failure(row.run_id), left.departure)
    served = runs.passing + [r for r in [runs.same_task_text] if r and r not in runs.passing]
    settings = options.settings
    with suffix_model(settings, served if options.verify else [], serve) as model:
        verifier = Verifier(
            store,
            home,
            failing,
            model,
            samples=options.samples,
            allow_live_tools=options.allow_live_tools,
            prices=prices,
            max_cost=options.max_cost,
            on_progress=on_progress,
        )
        causes = [
            Cause(c, verifier.verify(c.fix, c.untestable) if options.verify else _unverified(c))
            for c in found
        ]
    causes.sort(key=_rank)
    spent = verifier.cap.spent if model.live else None
    passing = [run.run_id for run in runs.passing]
    return WhyReport(
        row.run_id, row.status, row.reason, row.task_fingerprint, passing, model.name, causes, spent
    )


def _unverified(candidate: Candidate) -> Verification:
    if candidate.fix is None:
        return Verification("not_testable", candidate.untestable or "no fork tests it")
    return Verification("not_verified", "the candidates only: no fork was asked for")


def _rank(cause: Cause) -> tuple[int, float, int]:
    found = cause.verification
    rate = found.fixed / found.samples if found.samples else 0.0
    return (_VERDICT_RANK.index(found.verdict), -rate, KIND_ORDER.index(cause.candidate.kind))


def _task_runs(store: TraceStore, home: Path, failing: Any, fingerprint: str | None) -> TaskRuns:
    passing: list[Any] = []
    if fingerprint is not None:
        rows = store.runs(
            where=RunQuery(status="completed", task_fingerprint=fingerprint, samples=False),
            limit=PASSING_READ,
        )
        passing = [load_recording(r.run_id, home) for r in rows if r.run_id != failing.run_id]
    # The task fingerprint holds the system prompt: for the system-prompt candidate, the
    # runs of the same task text and the same tool names are "the same task".
    names = _tool_names(failing)
    rows = store.runs(
        where=RunQuery(status="completed", task=failing.run_start.task, samples=False),
        limit=PASSING_READ,
    )
    same = [load_recording(r.run_id, home) for r in rows if r.run_id != failing.run_id]
    same = [run for run in same if _tool_names(run) == names]
    return TaskRuns(failing, passing, newest_before(same, failing))


def _tool_names(run: Any) -> set[str]:
    return {str(t.get("function", t).get("name")) for t in run.run_start.tools}
