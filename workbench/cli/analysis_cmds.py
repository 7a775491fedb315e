"""`workbench failures` (failing runs grouped by failure signature, offline, no model) and
`workbench why RUN` (a failed run's candidate causes, each verified by a fork).

The answers come from `workbench.engine.analysis`; this module only lays them out.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from workbench.cli.common import CliError, add_home, positive_float, positive_int, print_json
from workbench.cli.run_filters import SINCE_HELP, when

if TYPE_CHECKING:
    from workbench.engine.analysis.failures import FailureGroup, FailureReport

LIMIT_DEFAULT = 20
EXAMPLES_DEFAULT = 3


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    failures = subparsers.add_parser(
        "failures",
        help="failing runs grouped by failure signature (offline, no model)",
        description=(
            "Groups the runs that did not complete (as `runs --failed` lists them) by a "
            "failure signature: the run's status and reason, its first failing step (a tool "
            "error, bad arguments, a model error, or the end itself) with that step's tool "
            "and error text, and the tools called just before it. Numbers, ids, hex, paths, "
            "URLs, quoted values and timestamps in the texts are masked, so runs that failed "
            "the same way group together. Each group shows how many runs, when it was first "
            "and last seen, failing runs per day, example runs and the models affected."
        ),
        epilog=(
            "examples:\n  workbench failures\n  workbench failures --since 7d\n"
            "  workbench failures --json | jq '.groups[0].examples'"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    failures.add_argument(
        "--since",
        type=when,
        metavar="TIME",
        help=SINCE_HELP,
    )
    failures.add_argument(
        "--limit",
        type=positive_int,
        default=LIMIT_DEFAULT,
        metavar="N",
        help=f"the N biggest groups (default {LIMIT_DEFAULT})",
    )
    failures.add_argument(
        "--examples",
        type=positive_int,
        default=EXAMPLES_DEFAULT,
        metavar="N",
        help=f"example runs per group, the newest (default {EXAMPLES_DEFAULT})",
    )
    failures.add_argument("--json", action="store_true", help="print the groups as JSON")
    add_home(failures)
    failures.set_defaults(func=cmd_failures)
    _register_why(subparsers)


def cmd_failures(args: argparse.Namespace) -> int:
    from workbench.cli.read_cmds import open_store
    from workbench.engine.analysis.failures import failure_report

    with open_store(args) as store:
        report = failure_report(store, args.since, examples=args.examples, limit=args.limit)
    if args.json:
        print_json(report.to_json())
    else:
        print("\n".join(failures_lines(report)))
    return 0


def failures_lines(report: FailureReport) -> list[str]:
    when_text = f" since {report.since:%Y-%m-%d %H:%M} UTC" if report.since else ""
    if not report.groups:
        return [f"no failing runs{when_text}" + ("" if report.since else " recorded")]
    groups = report.total_groups
    lines = [
        f"{report.failed_runs:,} failing run{'s' if report.failed_runs != 1 else ''}"
        f"{when_text} in {groups:,} group{'s' if groups != 1 else ''}"
        + (f" (the {len(report.groups)} biggest shown)" if groups > len(report.groups) else "")
        + (f"; per day {report.days[0]} → {report.days[-1]}" if report.days else ""),
    ]
    for group in report.groups:
        lines += ["", *_group_lines(report, group)]
    lines += ["", "`workbench show RUN` shows a run; a group's runs are listed newest first"]
    return lines


def _group_lines(report: FailureReport, group: FailureGroup) -> list[str]:
    from workbench.engine.views.stats import sparkline

    row = group.row
    step = f"{row.step} in {row.tool}" if row.tool else row.step
    head = f"{row.runs:>5,} × {row.status} · {step}"
    lines = [f"{head}   [{group.signature}]"]
    if row.reason:
        lines.append(f"        reason   {row.reason}")
    if row.error and row.error != f"{row.reason}":
        lines.append(f"        error    {row.error}")
    if row.tools_before:
        lines.append(f"        after    {' → '.join(row.tools_before)}")
    first = f"{row.first_seen:%Y-%m-%d %H:%M}" if row.first_seen else "-"
    last = f"{row.last_seen:%Y-%m-%d %H:%M}" if row.last_seen else "-"
    days = f"   per day │{sparkline([float(n) for n in group.per_day])}│" if report.days else ""
    lines.append(f"        seen     {first} → {last}{days}")
    tasks = f" · {row.tasks} task{'s' if row.tasks != 1 else ''}"
    lines.append(f"        models   {', '.join(row.models) or '-'}{tasks}")
    lines.append(f"        runs     {' '.join(run[:12] for run in row.examples)}")
    changes = group.changes
    if changes.run_before is None:
        lines.append(f"        first    {row.first_run[:12]}, the first run of its task")
    else:
        since = f"since {changes.run_before[:12]} ({changes.status_before}), the run before"
        what = (
            "; ".join(changes.changed) or "nothing in model, system prompt or tools"
            if changes.changed is not None
            else "not known: a run's set-up (its run_start) is not recorded"
        )
        lines.append(f"        changed  {what}")
        lines.append(f"                 {since} {row.first_run[:12]}")
    return lines


SAMPLES_DEFAULT = 3


def _register_why(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from workbench.cli.model_flags import add_model_flags

    why = subparsers.add_parser(
        "why",
        help="a failed run's candidate causes, each verified by a counterfactual fork",
        description=(
            "Reads the candidate causes of a failed run from its events and the runs of its "
            "task (where it left the passing runs' path, a tool error the model acted on, its "
            "first error, a tool description, schema or system prompt unlike the last "
            "passing run's, a repeated call, a limit hit), each citing the events it rests "
            "on. Each one a fork can test is tested: the run forked at that step with the "
            "fix applied, --samples times, under the home's tool policy (no tool runs live "
            "unless --allow-live-tools). The forks continue with the model given, else "
            "serve-model over the passing runs of the task, which answers only a request a "
            'passing run recorded (otherwise the cause "needs a model"). Live calls are '
            "estimated from <home>/prices.toml first and capped by --max-cost."
        ),
        epilog=(
            "examples:\n  workbench why 3f9a\n  workbench why 3f9a --samples 5 --model "
            "qwen3 --base-url http://localhost:8080/v1 --max-cost 0.05\n"
            "  workbench why 3f9a --markdown > issue.md"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    why.add_argument("run", help="run id (or unique prefix)")
    why.add_argument(
        "--samples",
        type=positive_int,
        default=SAMPLES_DEFAULT,
        metavar="N",
        help=f"forks per fix (default {SAMPLES_DEFAULT})",
    )
    why.add_argument(
        "--max-cost",
        type=positive_float,
        metavar="X",
        help="the most live model calls may cost, in prices.toml's currency",
    )
    why.add_argument(
        "--allow-live-tools",
        action="store_true",
        help="let the forks run tools that are not read-only for real (default: never)",
    )
    shown = why.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="print the report as JSON")
    shown.add_argument("--markdown", action="store_true", help="print it as Markdown")
    add_model_flags(why)
    add_home(why)
    why.set_defaults(func=cmd_why)


def cmd_why(args: argparse.Namespace) -> int:
    import sys

    from workbench.cli.common import load_prices, resolve_home
    from workbench.cli.model_flags import model_settings
    from workbench.cli.read_cmds import open_store
    from workbench.engine.analysis import why_text
    from workbench.engine.analysis.why import WhyOptions, explain
    from workbench.engine.http.serve import ServeError, served_model
    from workbench.engine.recording.running.service import SetupError
    from workbench.engine.recording.runs.load import RecordingError

    home = resolve_home(args)
    prices = load_prices(home)
    options = WhyOptions(
        samples=args.samples,
        settings=model_settings(args),
        max_cost=args.max_cost,
        allow_live_tools=args.allow_live_tools,
    )
    quiet = args.json or args.markdown

    def progress(line: str) -> None:
        if not quiet:
            sys.stderr.write(f"  {line}\n")

    with open_store(args, must_write=True) as store:
        try:
            report = explain(
                store, home, args.run, options, prices, serve=served_model, on_progress=progress
            )
        except (RecordingError, SetupError, ServeError) as exc:
            raise CliError(str(exc)) from None
    if args.json:
        print_json(report.to_json())
    elif args.markdown:
        sys.stdout.write(why_text.report_markdown(report))
    else:
        print("\n".join(why_text.report_lines(report)))
    return 0
