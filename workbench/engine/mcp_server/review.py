"""The review tools: annotate_run (`workbench note`), check_rules (`workbench check`, a look
that writes nothing) and judge_runs (`workbench judge`), each on the engine functions its
command uses. The rules, rubric and model script are files inside the home, as run_suite's
suite is; judging needs `--allow-writes` (its calls are runs, its scores annotations)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.engine.mcp_server.suites import home_file
from workbench.engine.mcp_server.tools import ToolError

if TYPE_CHECKING:
    from traces.store import TraceStore
    from workbench.engine.review.judge import Item, JudgeSetup, Key


def annotate(
    home: Path,
    store: TraceStore,
    run_id: str,
    *,
    turn: int | None = None,
    call_id: str | None = None,
    labels: list[str] | None = None,
    scores: dict[str, float] | None = None,
    text: str | None = None,
    author: str | None = None,
    remove: str | None = None,
) -> dict[str, Any]:
    """A note on the run, a turn or a call (or a tombstone), as `workbench note` writes it."""
    from workbench.engine.review.notes import NoteError, Target, add_note, author_name, remove_note

    if call_id is not None and turn is None:
        raise ToolError("annotate_run: a call_id needs the turn it was made in")
    if remove is not None and (labels or scores or text):
        raise ToolError("annotate_run: remove takes no labels, scores or text: it removes")
    who = author_name(author, home)
    target = Target(run_id, turn, call_id)
    try:
        if remove is not None:
            record: Any = remove_note(home, store, target, who, remove)[0]
        else:
            given = {name: float(value) for name, value in (scores or {}).items()}
            record = add_note(home, store, target, who, labels or [], given, text)[0]
    except NoteError as exc:
        raise ToolError(str(exc)) from None
    except OSError as exc:
        raise ToolError(f"cannot write the annotation: {exc.strerror or exc}") from None
    answer: dict[str, Any] = record.model_dump(mode="json", exclude_none=True)
    return answer


def check_rules(home: Path, store: TraceStore, *, rules: str) -> dict[str, Any]:
    """Every rule's figure and whether it crossed (`check --json`'s summary); the time of
    the last `workbench check` is left as it is, so its next run counts as before."""
    from traces.prices import Prices, PricesError
    from workbench.engine.review.checks import RulesError, evaluate, load_rules, summary

    try:
        loaded = load_rules(home_file(home, rules, "rules"))
        rates = Prices.load(home).rates()
    except (RulesError, PricesError) as exc:
        raise ToolError(str(exc)) from None
    return summary(evaluate(store, loaded, home, rates, remember=False))


Plan = tuple["JudgeSetup", list["Item"], set["Key"], int]
OffLoop = Callable[..., Awaitable[Any]]


async def judge_runs(
    home: Path,
    stored: Callable[[], Any],
    off_loop: OffLoop,
    *,
    rubric: str,
    runs: list[str] | None = None,
    since_days: int | None = None,
    sample: float | None = None,
    seed: int,
    max_cost: float | None = None,
    script: str | None = None,
) -> dict[str, Any]:
    """Judge the runs named (`runs`, else those of the last `since_days`) with the model
    the server's environment names, or `script`; the report of `judge --json`. `stored()`
    is the home's store with new traces ingested; `off_loop` runs the reading in a thread."""
    from workbench.engine.review.judge import judge_items

    if (runs is None) == (since_days is None):
        raise ToolError("judge_runs takes one of runs or since_days")
    if sample is not None and not 0 < sample <= 1:
        raise ToolError(f"judge_runs: sample must be a share from 0 to 1; got {sample:g}")
    if max_cost is not None and max_cost <= 0:
        raise ToolError(f"judge_runs: max_cost must be more than 0; got {max_cost:g}")
    since = None if since_days is None else datetime.now(UTC) - timedelta(days=since_days)
    ask = (rubric, runs or [], since, sample, seed, max_cost, script)
    setup, items, done, count = await off_loop(_plan, home, stored, *ask)
    report = await judge_items(setup, items, done, count)
    note = None
    if not setup.priced:
        note = f"the judge model {setup.model.name!r} has no price in prices.toml: cost unknown"
    return report.to_json(priced=setup.priced) | {"note": note}


def _plan(
    home: Path,
    stored: Callable[[], Any],
    rubric_file: str,
    runs: list[str],
    since: datetime | None,
    sample: float | None,
    seed: int,
    max_cost: float | None,
    script: str | None,
) -> Plan:
    """The judge (its model, price and cap), the items to judge and those judged before."""
    from traces.prices import Prices, PricesError
    from workbench.engine.recording.running.service import ModelSettings, SetupError
    from workbench.engine.recording.runs.load import RecordingError
    from workbench.engine.review.judge import JudgeError, chosen_runs, items_in, judge_setup
    from workbench.engine.review.rubric import RubricError, load_rubric

    settings = ModelSettings.from_env()
    if script is not None:
        settings = ModelSettings(script=home_file(home, script, "model script"))
    try:
        rubric = load_rubric(home_file(home, rubric_file, "rubric"))
        setup = judge_setup(home, rubric, settings, Prices.load(home), max_cost=max_cost)
    except (RubricError, PricesError, SetupError) as exc:
        raise ToolError(str(exc)) from None
    except JudgeError as exc:
        raise ToolError(f"max_cost {exc}") from None
    with stored() as store:
        run_ids, done = chosen_runs(store, rubric, runs, since, sample, seed)
    try:
        items = items_in(home, rubric, run_ids)
    except RecordingError as exc:
        raise ToolError(str(exc)) from None
    return setup, items, done, len(run_ids)
