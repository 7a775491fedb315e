"""Run a regression suite: N samples per case, pass rates, and the comparison with a baseline.

Each sample is a real agent run, recorded like any other in `<home>/traces/`, limited to
the turns the case looks at, with tools guarded so nothing changes the world. What the
model chose is judged against the case; pass rates are compared with the case's minimum
and, when given, a stored baseline's rates.

    result = await run_suite(suite, model, toolsets, RegressOptions(home=...))
    result.exit_code   # 0 all pass, 1 any failure or regression
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent_core.agent import Agent, AgentConfig
from agent_core.model.base import ChatModel
from agent_core.model.scripted import ScriptedModel
from agent_core.tools.base import Toolset, ToolSpec
from agent_core.wire.chat import content_text
from traces.events import Limits, ModelResponse, RunStart
from traces.home import open_run_trace
from traces.text import one_line
from workbench.engine.recording.fork.plan import ForkToolset
from workbench.engine.recording.fork.tool_policy import ToolPolicy
from workbench.engine.regress.context import (
    RecordedContext,
    ToolCall,
    find_trace,
    load_context,
    parse_calls,
)
from workbench.engine.regress.guard import GuardedToolset
from workbench.engine.regress.suite import Case, Suite, SuiteError

CaseStatus = Literal["pass", "fail", "regressed", "error"]


@dataclass(frozen=True)
class SampleResult:
    case_id: str
    sample: int
    run_id: str
    turns: list[list[ToolCall]]  # tool calls per turn the sample ran
    passed: bool
    reason: str  # why it failed ("" when it passed)
    status: str  # the run's end status
    error: str | None = None  # the model could not answer (not a judgement on the case)

    @property
    def chosen(self) -> str:
        names = [" + ".join(c.name for c in turn) or "(no tool)" for turn in self.turns]
        return " → ".join(names) if names else "(no answer)"


@dataclass
class CaseResult:
    case: Case
    samples: list[SampleResult]
    baseline_rate: float | None = None

    @property
    def pass_rate(self) -> float:
        return sum(s.passed for s in self.samples) / len(self.samples) if self.samples else 0.0

    @property
    def errored(self) -> bool:
        return bool(self.samples) and all(s.error for s in self.samples)

    @property
    def failed(self) -> bool:
        return self.pass_rate + 1e-9 < self.case.min_pass_rate

    @property
    def regressed(self) -> bool:
        return self.baseline_rate is not None and self.pass_rate + 1e-9 < self.baseline_rate

    @property
    def status(self) -> CaseStatus:
        if self.errored:
            return "error"
        if self.failed:
            return "fail"
        return "regressed" if self.regressed else "pass"

    def chosen_summary(self) -> str:
        counts = Counter(s.chosen for s in self.samples)
        return ", ".join(f"{name} ×{n}" for name, n in counts.most_common())

    def tools_involved(self) -> set[str]:
        case = self.case
        names = {n for n in (case.expect_tool, case.expect_not_tool) if n}
        names |= set(case.expect_sequence)
        names |= {c.name for s in self.samples for turn in s.turns for c in turn}
        return names


@dataclass(frozen=True)
class Baseline:
    name: str
    suite: str
    pass_rates: dict[str, float]
    tool_schemas: list[dict[str, Any]]
    created: str = ""
    model: str = ""


@dataclass
class SuiteResult:
    suite: Suite
    suite_run_id: str
    model: str
    cases: list[CaseResult]
    tool_schemas: list[dict[str, Any]]  # every schema offered, with overrides applied
    tool_descriptions: dict[str, str]
    duration_s: float
    baseline: Baseline | None = None

    @property
    def exit_code(self) -> int:
        return 0 if all(c.status == "pass" for c in self.cases) else 1

    @property
    def all_errored(self) -> bool:
        return bool(self.cases) and all(c.errored for c in self.cases)


@dataclass
class RegressOptions:
    # Whose traces folder the sample traces go to, with its redaction (`open_run_trace`);
    # None keeps them in memory only.
    home: Path | None = None
    samples: int | None = None  # overrides the suite's and cases' sample counts
    concurrency: int = 4
    tool_descriptions: dict[str, str] = field(default_factory=dict)
    recording_dirs: list[Path] = field(default_factory=list)  # where from_run traces are found
    params: dict[str, Any] = field(default_factory=dict)
    model_timeout_s: float = 60.0
    baseline: Baseline | None = None
    secrets: list[str | None] = field(default_factory=list)  # kept out of the sample traces
    tool_policy: ToolPolicy = field(default_factory=ToolPolicy)  # each tool's side effects


Progress = Callable[[int, int, SampleResult], None]


def judge(
    case: Case, turns: list[list[ToolCall]], texts: list[str] | None = None
) -> tuple[bool, str]:
    """Did this sample's decisions (the tool calls and the text of each turn) meet the
    case? Returns (passed, reason when not)."""
    first = turns[0] if turns else []
    names = [c.name for c in first]
    if case.expect_no_tool and first:
        return False, f"chose {' + '.join(names)}"
    if case.expect_text is not None:
        said = (texts or [""])[0]
        if _words(case.expect_text) not in _words(said):
            return False, f"answered {one_line(said, 60)!r}" if said else "answered no text"
    if case.expect_sequence:
        flat = [c.name for turn in turns for c in turn]
        wanted = list(case.expect_sequence)
        if flat[: len(wanted)] != wanted:
            return False, f"called {' → '.join(flat) or 'no tool'}"
    if case.expect_tool:
        matching = [c for c in first if c.name == case.expect_tool]
        if not matching:
            return False, f"chose {' + '.join(names) or 'no tool'}"
        if case.expect_args:
            problems = [_args_problem(case.expect_args, c.arguments) for c in matching]
            if all(problems):
                return False, problems[0] or ""
    if case.expect_not_tool:
        every = [c.name for turn in turns for c in turn]
        if case.expect_not_tool in every:
            return False, f"called {case.expect_not_tool}"
    return True, ""


def _words(text: str) -> str:
    """Text as `expect_text` compares it: lower case, runs of white space as one space."""
    return " ".join(text.lower().split())


def _args_problem(expected: dict[str, Any], actual: dict[str, Any] | None) -> str:
    if actual is None:
        return "arguments were not valid JSON"
    for key, value in expected.items():
        if key not in actual:
            return f"argument {key} missing"
        if actual[key] != value:
            return f"argument {key}={actual[key]!r}, expected {value!r}"
    return ""


def prepare_contexts(suite: Suite, folders: list[Path]) -> dict[str, RecordedContext]:
    """Load every from_run case's recorded context up front, so a bad one stops the suite."""
    contexts: dict[str, RecordedContext] = {}
    search = [*folders, suite.path.parent / "traces", suite.path.parent]
    for case in suite.cases:
        if case.from_run is not None and case.turn is not None:
            path = find_trace(case.from_run, search)
            system = case.system_prompt or suite.system_prompt
            contexts[case.id] = load_context(path, case.turn, system=system)
    return contexts


async def run_suite(
    suite: Suite,
    model: ChatModel,
    toolsets: list[Toolset],
    options: RegressOptions,
    *,
    progress: Progress | None = None,
) -> SuiteResult:
    started = time.monotonic()
    contexts = prepare_contexts(suite, options.recording_dirs)
    listed = [(toolset, toolset.specs()) for toolset in toolsets]
    offered = {spec.name for _, specs in listed for spec in specs}
    offered |= {_schema_name(s) for context in contexts.values() for s in context.tools}
    unknown = sorted(set(options.tool_descriptions) - offered)
    if unknown:
        raise SuiteError(
            f"--tool-description names unknown tool {unknown[0]!r}; tools: "
            f"{', '.join(sorted(offered)) or 'none'}"
        )
    suite_run_id = uuid.uuid4().hex[:12]
    jobs = [
        (case, number)
        for case in suite.cases
        for number in range(1, suite.samples_for(case, options.samples) + 1)
    ]
    gate = asyncio.Semaphore(max(1, options.concurrency))
    done = 0
    schemas: dict[str, dict[str, Any]] = {}

    async def one(case: Case, number: int) -> SampleResult:
        nonlocal done
        async with gate:
            result, offered_schemas = await _run_sample(
                suite, case, number, model, listed, contexts.get(case.id), options, suite_run_id
            )
        for schema in offered_schemas:
            schemas.setdefault(_schema_name(schema), schema)
        done += 1
        if progress is not None:
            progress(done, len(jobs), result)
        return result

    samples = await asyncio.gather(*(one(case, number) for case, number in jobs))
    by_case: dict[str, list[SampleResult]] = {case.id: [] for case in suite.cases}
    for sample in samples:
        by_case[sample.case_id].append(sample)
    baseline = options.baseline
    cases = [
        CaseResult(
            case,
            by_case[case.id],
            baseline.pass_rates.get(case.id) if baseline is not None else None,
        )
        for case in suite.cases
    ]
    return SuiteResult(
        suite=suite,
        suite_run_id=suite_run_id,
        model=model.name,
        cases=cases,
        tool_schemas=[schemas[name] for name in sorted(schemas)],
        tool_descriptions=dict(options.tool_descriptions),
        duration_s=time.monotonic() - started,
        baseline=baseline,
    )


def _schema_name(schema: dict[str, Any]) -> str:
    return str(schema.get("function", schema).get("name", ""))


async def _run_sample(
    suite: Suite,
    case: Case,
    number: int,
    model: ChatModel,
    listed: list[tuple[Toolset, list[ToolSpec]]],
    context: RecordedContext | None,
    options: RegressOptions,
    suite_run_id: str,
) -> tuple[SampleResult, list[dict[str, Any]]]:
    if not listed and context is not None:
        recorded_only = ForkToolset(context.plan)  # recorded results only
        listed = [(recorded_only, recorded_only.specs())]
    recorded = context.results if context is not None else {}
    guarded = [
        GuardedToolset(t, specs=specs, recorded=recorded, policy=options.tool_policy)
        for t, specs in listed
    ]
    start_turn = context.turn if context is not None else 1
    limits = Limits(
        max_turns=start_turn - 1 + case.turns_needed,
        model_timeout_s=options.model_timeout_s,
        **({"max_tools": suite.max_tools} if suite.max_tools else {}),
    )
    decisions: dict[str, Any] = {}
    for toolset in guarded:
        decisions |= toolset.policy_record
    meta = {
        "tool_policy": decisions,
        "regress": {
            "suite": suite.name,
            "suite_run": suite_run_id,
            "case": case.id,
            "sample": number,
        },
    }
    if context is not None:
        config = context.plan.config(
            limits=limits,
            tool_descriptions=dict(options.tool_descriptions),
            meta=meta,
            origin="regression_sample",
            **({"params": dict(options.params)} if options.params else {}),
        )
    else:
        config = AgentConfig(
            task=case.task or "",
            system_prompt=case.system_prompt or suite.system_prompt,
            limits=limits,
            params=dict(options.params),
            tool_descriptions=dict(options.tool_descriptions),
            meta=meta,
            origin="regression_sample",
        )
    sinks = (
        [open_run_trace(options.home, config.run_id, options.secrets)]
        if options.home is not None
        else []
    )
    # A scripted model answers each sample from the start of its script: shared, the
    # samples would use up its steps one after another.
    sample_model = model.fresh() if isinstance(model, ScriptedModel) else model
    agent = Agent(sample_model, list[Toolset](guarded), config, sinks=sinks)
    turns: dict[int, list[ToolCall]] = {}
    texts: dict[int, str] = {}
    offered: list[dict[str, Any]] = []
    error: str | None = None
    model_failed: str | None = None  # why the model call failed, if it did
    status = "error"
    try:
        async for item in agent.run_stream():
            if isinstance(item, RunStart):
                offered = list(item.tools)
            elif isinstance(item, ModelResponse) and item.turn is not None:
                turns[item.turn] = parse_calls(item.message)
                texts[item.turn] = content_text(item.message.get("content"))
        if agent.result is not None:
            status = agent.result.status
            if status == "error" or agent.result.timeout_layer == "model":
                model_failed = agent.result.reason or "the model call failed"
    except Exception as exc:  # a sample that crashes is a failed sample, not a dead suite
        error = f"{type(exc).__name__}: {exc}"
    finally:
        for sink in sinks:
            sink.close()
    ordered = [turns[n] for n in sorted(turns)]
    if error is not None:
        passed, reason = False, error
    else:
        passed, reason = judge(case, ordered, [texts[n] for n in sorted(turns)])
        if not passed and model_failed is not None:
            # What the model did not get to answer is no judgement on the tools: an
            # unreachable or silent model must never read as a regression in CI.
            error = reason = model_failed
    return (
        SampleResult(case.id, number, config.run_id, ordered, passed, reason, status, error),
        offered,
    )
