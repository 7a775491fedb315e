"""`workbench check RULES.toml [--webhook URL]`: thresholds over the store, for CI and cron.

Thin: parse, call `workbench.engine.review.checks`, print. Exit 1 when any rule crossed its
threshold, 0 otherwise; a webhook that cannot be reached is one line and changes nothing.
See docs/review.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from workbench.cli.common import CliError, add_home, load_prices, print_json, read_home


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "check",
        help="check rules over the store (failure rate, latency, cost, labels, new failures)",
        description=(
            "Evaluate each rule of RULES.toml over the store in SQL: a failure rate, a p95 "
            "latency, a cost per run or a label's count over a window, or failure signatures "
            "new since the last check. Prints what crossed its threshold; exit 1 when any "
            "did, 0 otherwise. --webhook POSTs a JSON summary. See docs/review.md."
        ),
    )
    parser.add_argument("rules", metavar="RULES.toml", help="the rules file")
    parser.add_argument("--webhook", metavar="URL", help="POST a JSON summary to URL")
    parser.add_argument("--json", action="store_true", help="print every rule's figure as JSON")
    add_home(parser)
    parser.set_defaults(func=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    from traces.home import home_redactor
    from workbench.cli.read_cmds import open_store
    from workbench.engine.review.checks import (
        RulesError,
        evaluate,
        load_rules,
        post_webhook,
        summary,
    )

    try:
        rules = load_rules(Path(args.rules))
    except RulesError as exc:
        raise CliError(str(exc)) from None
    home = read_home(args)
    prices = load_prices(home)
    rates = prices.rates()
    with open_store(args) as store:
        findings = evaluate(store, rules, home, rates)
    crossed = [f for f in findings if f.crossed]
    told = summary(findings)
    if args.json:
        print_json(told)
    else:
        for finding in findings:
            mark = "CROSSED" if finding.crossed else "ok     "
            value = "no runs" if finding.value is None else f"{finding.value:g}"
            print(
                f"{mark}  {finding.rule.name}: {finding.rule.metric} {value} "
                f"(above {finding.rule.above:g}; over {finding.counted})"
            )
            for line in finding.detail:
                print(f"           new: {line}")
        print(f"{len(crossed)} of {len(findings)} rule(s) crossed")
    if args.webhook:
        keys = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
        redactor = home_redactor(home, [os.environ.get(key) for key in keys])
        problem = post_webhook(args.webhook, told, redactor)
        if problem is not None:
            print(f"workbench: {problem}", file=sys.stderr)
    return 1 if crossed else 0
