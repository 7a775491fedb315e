"""`workbench judge`: an LLM judge scores runs against a rubric; its scores are annotations.

Each judged item (a run's final answer, each turn, or each tool choice: the rubric's
`target`) is one call of the judge model, made as a recorded run in the home (so a verdict
replays and forks like any run), and its scores are appended as a note by
`judge:<rubric>` that names the rubric's version and that run (`traces.annotations.JudgeRef`).

Cost is counted before each call: the prompt's token estimate and the whole output cap at
the judge model's price, kept under `--max-cost` by `traces.prices.CostCap` (the cap
`workbench why` keeps too), so the cap holds exactly; a model without a price cannot be
capped (the front end refuses). An item already judged by the same rubric version is
skipped; an answer that is not the scores asked for leaves its item unjudged (and
unwritten, so a later judge tries it again) and the others go on.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_core.agent import Agent, AgentConfig
from agent_core.model.base import ChatModel
from agent_core.model.scripted import ScriptedModel
from agent_core.tokens import estimate_prompt
from traces.annotations import JudgeRef, Note, append_annotation, new_id
from traces.events import Limits
from traces.home import open_run_trace
from traces.prices import CostCap, Estimate, Prices
from traces.text import one_line
from workbench.engine.recording.running.service import ModelSettings, build_model
from workbench.engine.recording.runs.load import Recording, load_recording
from workbench.engine.review.rubric import Rubric

if TYPE_CHECKING:
    from traces.store import TraceStore

# What an item's parts are cut to in the judge's prompt (a tool result can be huge).
_PART_CHARS = 4000


@dataclass(frozen=True)
class Item:
    """One thing to judge: a run's answer, one of its turns, or one tool call."""

    run_id: str
    turn: int | None
    call_id: str | None
    prompt: str  # the judge's user message

    @property
    def key(self) -> tuple[str, int | None, str | None]:
        return (self.run_id, self.turn, self.call_id)


@dataclass(frozen=True)
class Verdict:
    item: Item
    judge_run: str | None
    scores: dict[str, float] | None  # None: not judged
    reason: str
    cost: float | None  # what the call cost (None: no price)
    note_id: str | None = None


@dataclass
class JudgeReport:
    runs: int  # runs asked for (after sampling)
    verdicts: list[Verdict] = field(default_factory=list)
    skipped: int = 0  # items judged before by this rubric version
    spent: float = 0.0  # what the priced calls cost
    stopped: str | None = None  # why judging stopped before the end (the cost cap)
    next_cost: float | None = None  # the estimate of the call the cap stopped
    left: int = 0  # items not reached

    @property
    def judged(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.scores is not None]

    @property
    def failed(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.scores is None]

    def runs_judged(self) -> int:
        return len({v.item.run_id for v in self.judged})

    def to_json(self, priced: bool) -> dict[str, Any]:
        """The report as `workbench judge --json` prints it and judge_runs answers it
        (`priced`: the judge model has a price, so what was spent is known)."""
        return {
            "runs": self.runs,
            "runs_judged": self.runs_judged(),
            "judged": len(self.judged),
            "not_judged": len(self.failed),
            "skipped": self.skipped,
            "left": self.left,
            "spent": self.spent if priced else None,
            "stopped": self.stopped,
            "next_cost": self.next_cost,
            "verdicts": [
                {
                    "run_id": v.item.run_id,
                    "turn": v.item.turn,
                    "call_id": v.item.call_id,
                    "scores": v.scores,
                    "reason": v.reason,
                    "judge_run": v.judge_run,
                    "annotation": v.note_id,
                    "cost": v.cost,
                }
                for v in self.verdicts
            ],
        }


def sampled(run_ids: Iterable[str], fraction: float | None, seed: int) -> list[str]:
    """The runs a sample of `fraction` keeps: each run by a hash of the seed and its id, so
    a seed keeps the same runs whatever else is in the list."""
    if fraction is None or fraction >= 1:
        return list(run_ids)

    def draw(run_id: str) -> float:
        digest = hashlib.sha256(f"{seed}:{run_id}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64

    return [run_id for run_id in run_ids if draw(run_id) < fraction]


def items_of(recording: Recording, rubric: Rubric) -> list[Item]:
    """What the rubric judges in this run, each with the judge's prompt."""
    start, end = recording.run_start, recording.run_end
    head = f"Task given to the agent:\n{_cut(start.task)}\n"
    run_id = recording.run_id
    if rubric.target == "answer":
        if end is None:
            said = "(the run has no end: it was cut off)"
        else:
            said = (
                end.final_answer or f"(no final answer; the run ended {end.status}: {end.reason})"
            )
        return [Item(run_id, None, None, f"{head}\nThe agent's final answer:\n{_cut(said)}")]
    items: list[Item] = []
    for number, node in sorted(recording.turns.items()):
        response = node.response
        text = ""
        if response is not None:
            text = str(response.message.get("content") or "")
        if rubric.target == "turn":
            if response is None:
                continue
            calls = "\n".join(
                f"- {call.start.name}({_cut(call.start.arguments_raw, 500)}) -> "
                f"{'ok' if call.end and call.end.ok else 'error'}: "
                f"{_cut(call.end.result if call.end else '(no result)', 800)}"
                for call in node.tool_calls
            )
            prompt = (
                f"{head}\nTurn {number}. What the agent said:\n{_cut(text) or '(nothing)'}\n"
                f"\nTools it called, with their results:\n{calls or '(none)'}"
            )
            items.append(Item(run_id, number, None, prompt))
            continue
        offered = "\n".join(
            f"- {name}: {_cut(str(fn.get('description') or ''), 300)}"
            for tool in start.tools
            if isinstance(fn := tool.get("function", tool), dict) and (name := fn.get("name"))
        )
        for call in node.tool_calls:
            result = call.end.result if call.end is not None else "(no result)"
            prompt = (
                f"{head}\nTools offered:\n{offered or '(none recorded)'}\n\nTurn {number}. "
                f"What the agent said:\n{_cut(text) or '(nothing)'}\n\nIt called "
                f"{call.start.name} with {_cut(call.start.arguments_raw, 1000)}\n"
                f"Result:\n{_cut(result, 1500)}"
            )
            items.append(Item(run_id, number, call.start.call_id, prompt))
    return items


def system_prompt(rubric: Rubric) -> str:
    """The judge's instructions: the rubric's, and the one answer shape it must give."""
    low, high = rubric.scale
    shape = ", ".join(f'"{name}": <number>' for name in rubric.scores)
    meanings = "\n".join(f"- {name}: {meaning}" for name, meaning in rubric.scores.items())
    return (
        f"{rubric.instructions}\n\nScores, each a number from {low:g} to {high:g}:\n{meanings}\n\n"
        f'Answer with one JSON object and nothing else: {{{shape}, "reason": "<one sentence>"}}'
    )


def estimate_tokens(rubric: Rubric, item: Item) -> tuple[int, int]:
    """The call's input tokens as the agent estimates a prompt, and its output cap."""
    messages = [
        {"role": "system", "content": system_prompt(rubric)},
        {"role": "user", "content": item.prompt},
    ]
    return estimate_prompt(messages, []), rubric.max_output_tokens


def read_scores(answer: str | None, rubric: Rubric) -> tuple[dict[str, float], str]:
    """The scores and reason in a judge's answer; `ValueError` saying what is wrong."""
    text = (answer or "").strip()
    fenced = re.search(r"\{.*\}", text, re.DOTALL)
    if fenced is None:
        raise ValueError(f"no JSON object in the judge's answer {one_line(text, 80)!r}")
    try:
        data = json.loads(fenced.group(0))
    except ValueError:
        raise ValueError(f"the judge's answer is not JSON: {one_line(text, 80)!r}") from None
    if not isinstance(data, dict):
        raise ValueError("the judge's answer is not a JSON object")
    low, high = rubric.scale
    scores: dict[str, float] = {}
    for name in rubric.scores:
        value = data.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"the judge gave no number for {name!r}")
        if not low <= value <= high:
            raise ValueError(f"the judge's {name}={value:g} is outside {low:g}..{high:g}")
        scores[name] = float(value)
    reason = data.get("reason")
    return scores, one_line(reason, 500) if isinstance(reason, str) else ""


@dataclass
class JudgeSetup:
    home: Path
    rubric: Rubric
    model: ChatModel
    prices: Prices  # the judge model's price, if it has one, counts what judging spends
    max_cost: float | None = None
    params: dict[str, Any] = field(default_factory=dict)  # e.g. the output cap, by wire
    secrets: list[str | None] = field(default_factory=list)
    model_timeout_s: float = 60.0

    @property
    def priced(self) -> bool:
        """The judge model has a price in `<home>/prices.toml`: its cost is counted."""
        return self.model.name in self.prices.models


class JudgeError(Exception):
    """Judging cannot start: a cost cap without the model's price. One line saying what
    to add, after the name of the cap as the front end calls it (`--max-cost`)."""


def judge_setup(
    home: Path,
    rubric: Rubric,
    settings: ModelSettings,
    prices: Prices,
    *,
    max_cost: float | None = None,
    model_timeout_s: float = 60.0,
) -> JudgeSetup:
    """The judge model `settings` name (`SetupError` when none), its output capped at the
    rubric's `max_output_tokens` in its wire format's own parameter; `JudgeError` when a
    cost cap is asked for a model without a price."""
    from agent_core.wire.codecs import api_named, codec_for

    model = build_model(settings, Limits(model_timeout_s=model_timeout_s))
    if max_cost is not None and model.name not in prices.models:
        raise JudgeError(
            f"needs a price for the judge model {model.name!r}: add "
            f'[models."{model.name}"] input = … output = … to {home / "prices.toml"}'
        )
    cap = codec_for(api_named(settings.api)).output_cap
    return JudgeSetup(
        home=home,
        rubric=rubric,
        model=model,
        prices=prices,
        max_cost=max_cost,
        params={cap: rubric.max_output_tokens},
        secrets=[settings.api_key],
        model_timeout_s=model_timeout_s,
    )


Key = tuple[str, int | None, str | None]


def chosen_runs(
    store: TraceStore,
    rubric: Rubric,
    runs: list[str],
    since: datetime | None,
    sample: float | None = None,
    seed: int = 0,
) -> tuple[list[str], set[Key]]:
    """The runs to judge (`runs` resolved, else those started since `since` that are not
    judge calls or regression samples), sampled; and the items the rubric's version has
    judged before, which judging skips."""
    from traces.store.judging import judge_candidates, judged_items

    found = [store.resolve_run(ref) for ref in runs] if runs else judge_candidates(store, since)
    run_ids = sampled(list(dict.fromkeys(found)), sample, seed)
    return run_ids, judged_items(store, rubric.author, rubric.version)


def items_in(home: Path, rubric: Rubric, run_ids: list[str]) -> list[Item]:
    """What the rubric judges in each run, read from its recording (`RecordingError`)."""
    items: list[Item] = []
    for run_id in run_ids:
        items += items_of(load_recording(run_id, home), rubric)
    return items


Progress = Callable[[int, int, Verdict], None]


async def judge_items(
    setup: JudgeSetup,
    items: list[Item],
    judged_before: set[Key],
    runs: int,
    progress: Progress | None = None,
) -> JudgeReport:
    """Judge each item not judged before, in order, within the cost cap; the judge
    model's connection is closed at the end, however it ends."""
    try:
        return await _judge_all(setup, items, judged_before, runs, progress)
    finally:
        close = getattr(setup.model, "aclose", None)
        if close is not None:
            await close()


async def _judge_all(
    setup: JudgeSetup,
    items: list[Item],
    judged_before: set[Key],
    runs: int,
    progress: Progress | None,
) -> JudgeReport:
    report = JudgeReport(runs=runs)
    todo = [item for item in items if item.key not in judged_before]
    report.skipped = len(items) - len(todo)
    cap = CostCap(setup.max_cost)
    for index, item in enumerate(todo):
        input_tokens, output_tokens = estimate_tokens(setup.rubric, item)
        name = setup.model.name
        estimate = Estimate(
            name, input_tokens, output_tokens, setup.prices.cost(name, input_tokens, output_tokens)
        )
        refusal = cap.refusal(estimate)
        if refusal is not None:
            report.stopped, report.next_cost = refusal, estimate.amount
            report.left = len(todo) - index
            break
        verdict = await _judge_one(setup, item, estimate.amount)
        cap.spend(verdict.cost)
        report.spent = cap.spent
        report.verdicts.append(verdict)
        if progress is not None:
            progress(index + 1, len(todo), verdict)
    return report


async def _judge_one(setup: JudgeSetup, item: Item, estimate: float | None) -> Verdict:
    rubric = setup.rubric
    config = AgentConfig(
        task=item.prompt,
        system_prompt=system_prompt(rubric),
        limits=Limits(max_turns=1, model_timeout_s=setup.model_timeout_s),
        params=dict(setup.params),
        meta={
            "judge": {
                "rubric": rubric.name,
                "version": rubric.version,
                "run_id": item.run_id,
                "turn": item.turn,
                "call_id": item.call_id,
            }
        },
    )
    # A scripted judge answers each call from the start of its script, as suites do.
    model = setup.model.fresh() if isinstance(setup.model, ScriptedModel) else setup.model
    sink = open_run_trace(setup.home, config.run_id, setup.secrets)
    try:
        result = await Agent(model, [], config, sinks=[sink]).run()
    finally:
        sink.close()
    totals = result.totals
    spent = setup.prices.cost(setup.model.name, totals.input_tokens, totals.output_tokens)
    cost = spent if spent is not None and totals.total_tokens else estimate
    if result.status != "completed":
        why = f"the judge call ended {result.status}: {one_line(result.reason, 120)}"
        return Verdict(item, config.run_id, None, why, cost)
    try:
        scores, reason = read_scores(result.final_answer, rubric)
    except ValueError as exc:
        return Verdict(item, config.run_id, None, str(exc), cost)
    note = Note(
        id=new_id(),
        author=rubric.author,
        run_id=item.run_id,
        turn=item.turn,
        call_id=item.call_id,
        scores=scores,
        text=reason or None,
        judge=JudgeRef(rubric=rubric.name, version=rubric.version, run=config.run_id),
    )
    append_annotation(setup.home, note)
    return Verdict(item, config.run_id, scores, reason, cost, note.id)


def _cut(text: str | None, limit: int = _PART_CHARS) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"
