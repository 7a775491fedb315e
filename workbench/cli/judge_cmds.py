"""`workbench judge RUBRIC.toml`: an LLM judge scores runs; its scores are annotations.

Thin: parse, pick the runs, price the judge model, call `workbench.engine.review.judge`,
print. See docs/review.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.cli.common import (
    CliError,
    add_home,
    fraction,
    load_prices,
    positive_float,
    print_json,
    read_home,
)
from workbench.cli.model_flags import add_model_flags, model_settings
from workbench.cli.run_filters import SINCE_HELP, when

if TYPE_CHECKING:
    from workbench.engine.review.judge import JudgeReport, Verdict


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "judge",
        help="score runs with an LLM judge against a rubric (scores become annotations)",
        description=(
            "Score runs (the final answer, each turn, or each tool choice, as the rubric "
            "says) with an LLM judge on any OpenAI-compatible, Responses or Anthropic "
            "endpoint, or a model script. Each judge call is a recorded run; its scores are "
            "annotations by judge:<rubric name>. Items already judged by the same rubric "
            "version are skipped. Exit 0 when every item asked for was judged, 1 when some "
            "were not (a bad answer, the cost cap). See docs/review.md."
        ),
    )
    parser.add_argument("rubric", metavar="RUBRIC.toml", help="the rubric file")
    parser.add_argument("runs", nargs="*", metavar="RUN", help="run ids (or unique prefixes)")
    parser.add_argument("--since", type=when, metavar="TIME", help=SINCE_HELP)
    parser.add_argument(
        "--sample", type=fraction, metavar="F", help="judge this share of the runs (0..1)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="N", help="which sample --sample draws (0)"
    )
    parser.add_argument(
        "--max-cost",
        type=positive_float,
        metavar="X",
        help="stop before the call that would spend more than X (needs the judge model's "
        "price in <home>/prices.toml)",
    )
    add_model_flags(parser)
    parser.add_argument(
        "--model-timeout", type=positive_float, default=60.0, metavar="S", help="per call (60)"
    )
    parser.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    add_home(parser)
    parser.set_defaults(func=cmd_judge)


def cmd_judge(args: argparse.Namespace) -> int:
    import asyncio

    from workbench.cli.read_cmds import open_store
    from workbench.engine.recording.runs.load import RecordingError
    from workbench.engine.review.judge import (
        JudgeError,
        chosen_runs,
        items_in,
        judge_items,
        judge_setup,
    )
    from workbench.engine.review.rubric import RubricError, load_rubric

    try:
        rubric = load_rubric(Path(args.rubric))
    except RubricError as exc:
        raise CliError(str(exc)) from None
    if args.runs and args.since is not None:
        raise CliError("give RUN ids or --since, not both")
    if not args.runs and args.since is None:
        raise CliError("name the runs to judge: RUN ids, or --since TIME (e.g. --since 1d)")
    home = read_home(args)
    prices = load_prices(home)
    try:
        setup = judge_setup(
            home,
            rubric,
            model_settings(args),
            prices,
            max_cost=args.max_cost,
            model_timeout_s=args.model_timeout,
        )
    except JudgeError as exc:
        raise CliError(f"--max-cost {exc}") from None
    if not setup.priced:
        print(
            f"note: the judge model {setup.model.name!r} has no price in "
            f"{home / 'prices.toml'}; its cost is not counted",
            file=sys.stderr,
        )
    with open_store(args) as store:
        run_ids, done = chosen_runs(store, rubric, args.runs, args.since, args.sample, args.seed)
    try:
        items = items_in(home, rubric, run_ids)
    except RecordingError as exc:
        raise CliError(str(exc)) from None
    report = asyncio.run(judge_items(setup, items, done, len(run_ids), _progress(args)))
    _print(report, args, prices.format if setup.priced else None)
    return 1 if report.failed or report.stopped else 0


def _progress(args: argparse.Namespace) -> Any:
    if args.json:
        return None

    def said(done: int, total: int, verdict: Verdict) -> None:
        item = verdict.item
        where = f"{item.run_id[:12]}" + (f":{item.turn}" if item.turn else "")
        where += f":{item.call_id}" if item.call_id else ""
        if verdict.scores is None:
            print(f"not judged {where}: {verdict.reason} (judge run {verdict.judge_run})")
            return
        scores = " ".join(f"{k}={v:g}" for k, v in verdict.scores.items())
        print(f"{where}  {scores}  {verdict.reason}")

    return said


def _print(report: JudgeReport, args: argparse.Namespace, money: Any) -> None:
    cost = money(report.spent) if money is not None else "cost unknown"
    if args.json:
        print_json(report.to_json(priced=money is not None))
        return
    line = (
        f"judged {len(report.judged)} item(s) of {report.runs_judged()} of {report.runs} run(s)"
        f" ({cost}); {len(report.failed)} not judged, {report.skipped} judged before"
    )
    if report.stopped:
        line += f"; stopped, {report.left} item(s) left: {report.stopped}"
    print(line)
