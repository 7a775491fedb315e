"""Counterfactual forks: does a candidate's fix flip the failed run's outcome?

Each fork is made by the one fork runner (`recording.fork.runner.run_fork`) under the tool
policy of the home (no tool runs live unless the user allows it), `samples` times, and is
an ordinary run linked to the failed one. The model for the suffix is the one configured;
with none, serve-model over the passing runs of the task (`ServeRecorded`, started by the
front end: this wing may not import `http`), which answers only a request recorded in a
passing run, so a fork it cannot answer leaves the candidate "needs a model".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from agent_core.tokens import estimate_prompt
from traces.events import Error
from traces.prices import CostCap, Estimate, Prices
from workbench.engine.analysis.prices import fork_estimate
from workbench.engine.recording.fork.plan import ForkError, ForkRequest
from workbench.engine.recording.fork.runner import ForkOptions, run_fork
from workbench.engine.recording.running.service import ModelSettings, SetupError

if TYPE_CHECKING:
    from pathlib import Path

    from traces.store import TraceStore
    from workbench.engine.analysis.candidates import Fix
    from workbench.engine.recording.runs.load import Recording

# serve-model over recorded runs, as the settings a fork's model is built from; the front
# end passes `workbench.engine.http.serve.served_model`.
ServeRecorded = Callable[["list[Recording]"], AbstractContextManager[ModelSettings]]

Verdict = Literal["fixes", "sometimes", "no_effect", "needs_model", "not_verified", "not_testable"]
# A served fork whose request no passing run recorded ends on serve-model's 409 with this.
_NO_RECORDED_TURN = "matches no recorded turn"


@dataclass
class Verification:
    verdict: Verdict
    note: str = ""  # why not verified, needs a model, or cannot be tested
    samples: int = 0
    fixed: int = 0  # forks that completed
    signature_gone: int = 0  # forks that did not fail the way the run failed
    forks: list[str] = field(default_factory=list)  # the fork runs, in order

    def summary(self) -> str:
        if self.verdict in ("needs_model", "not_verified", "not_testable"):
            return self.note
        n = self.samples
        return (
            f"fixed in {self.fixed} of {n} sample{'s' if n != 1 else ''}; "
            f"the failing signature gone in {self.signature_gone} of {n}"
        )

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "summary": self.summary()}


@dataclass(frozen=True)
class SuffixModel:
    """The model forks continue with, and how it was chosen."""

    settings: ModelSettings | None  # None: none configured and no passing run to serve
    served: bool  # serve-model over recorded passing runs
    live: bool  # calls cost money: estimated and capped
    name: str


def configured(settings: ModelSettings) -> bool:
    return settings.script is not None or bool(settings.model)


@contextmanager
def suffix_model(
    settings: ModelSettings, passing: list[Recording], serve: ServeRecorded | None
) -> Iterator[SuffixModel]:
    if configured(settings):
        live = settings.script is None
        yield SuffixModel(settings, False, live, settings.model or f"script {settings.script}")
    elif passing and serve is not None:
        with serve(passing) as served:
            yield SuffixModel(
                served, True, False, f"serve-model over {len(passing)} passing run(s)"
            )
    else:
        yield SuffixModel(None, False, False, "none")


class Verifier:
    """Runs each fix's forks once (candidates with the same fix share them)."""

    def __init__(
        self,
        store: TraceStore,
        home: Path,
        failing: Recording,
        model: SuffixModel,
        *,
        samples: int,
        allow_live_tools: bool,
        prices: Prices,
        max_cost: float | None,
        on_progress: Callable[[str], object] | None = None,
    ) -> None:
        self.store, self.home, self.failing, self.model = store, home, failing, model
        self.samples, self.allow_live_tools, self.prices = samples, allow_live_tools, prices
        self.cap = CostCap(max_cost)
        self.on_progress = on_progress or (lambda _: None)
        self._done: dict[str, Verification] = {}
        self._signature = _signatures(store, [failing.run_id]).get(failing.run_id)
        self._model_failed: str | None = None

    def verify(self, fix: Fix | None, untestable: str | None) -> Verification:
        if fix is None:
            return Verification("not_testable", untestable or "no fork tests it")
        if fix.key not in self._done:
            self._done[fix.key] = self._run(fix)
        return self._done[fix.key]

    def _run(self, fix: Fix) -> Verification:
        model = self.model
        if model.settings is None:
            return Verification(
                "needs_model",
                "none configured (--model, --script) and no passing run of its task to serve",
            )
        if model.served and not fix.edited:
            return Verification(
                "needs_model", "serve-model would only repeat a recorded answer to the same request"
            )
        if self._model_failed is not None:
            return Verification("not_verified", self._model_failed)
        request = ForkRequest(
            turn=fix.turn,
            system=fix.system,
            tool_descriptions=dict(fix.tool_descriptions),
            tool_schemas=dict(fix.tool_schemas),
            mocks=dict(fix.mocks),
            allow_side_effects=self.allow_live_tools,
        )
        found = Verification("no_effect")
        for sample in range(1, self.samples + 1):
            if model.live:
                refusal = self.cap.refusal(self._estimate(fix), "fork")
                if refusal is not None:
                    return _partial(found, refusal)
            self.on_progress(f"fork {sample}/{self.samples}: {fix.says}")
            try:
                outcome = run_fork(
                    self.failing, request, ForkOptions(model.settings), self.home, lambda _: None
                )
            except (ForkError, SetupError) as exc:
                return _partial(found, str(exc))
            result = outcome.result
            found.forks.append(result.run_id)
            self.store.ingest([outcome.trace])
            if model.live:
                totals = result.totals
                self.cap.spend(
                    self.prices.cost(outcome.model, totals.input_tokens, totals.output_tokens)
                )
            if result.status == "error":
                failure = _model_error(self.store, result.run_id)
                if failure is not None:
                    if model.served and _NO_RECORDED_TURN in failure.message:
                        return Verification(
                            "needs_model",
                            "no passing run recorded the fixed request "
                            f"(fork {result.run_id[:12]})",
                            forks=found.forks,
                        )
                    self._model_failed = f"the model failed mid-verification: {failure.message}"
                    return _partial(found, self._model_failed)
            found.samples += 1
            found.fixed += result.status == "completed"
        gone = _signatures(self.store, found.forks)
        found.signature_gone = sum(gone.get(run) != self._signature for run in found.forks)
        found.verdict = _verdict(found.fixed, found.samples)
        return found

    def _estimate(self, fix: Fix) -> Estimate:
        failing = self.failing
        request = failing.turns[fix.turn].request
        prompt = estimate_prompt(request.messages, request.tools) if request is not None else 0
        limits = failing.run_start.limits
        return fork_estimate(
            self.prices,
            self.model.name,
            prompt_tokens=prompt,
            turns_left=limits.max_turns - fix.turn + 1,
            budget=limits.token_budget,
        )


def _verdict(fixed: int, samples: int) -> Verdict:
    if fixed * 2 > samples:
        return "fixes"
    return "sometimes" if fixed else "no_effect"


def _partial(found: Verification, why: str) -> Verification:
    """Forks stopped early: what they showed so far, not verified."""
    done = f"after {found.samples} sample(s): " if found.samples else ""
    return Verification("not_verified", f"{done}{why}", found.samples, found.fixed, 0, found.forks)


def _model_error(store: TraceStore, run_id: str) -> Error | None:
    """The model error that ended a run, if a model error did."""
    errors = [e for e in store.events(run_id, types=["error"]) if isinstance(e, Error)]
    return errors[-1] if errors and errors[-1].where == "model" else None


def _signatures(store: TraceStore, run_ids: list[str]) -> dict[str, str]:
    """Each failing run's failure signature (`workbench failures`); runs that did not fail
    have none."""
    return store.failure_signatures(run_ids) if run_ids else {}
