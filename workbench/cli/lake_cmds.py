"""`workbench push`, `pull` and `lake status|compact`: the team's shared store
(`traces.store.lake`; docs/team.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.cli.common import (
    CliError,
    ExitCode,
    add_home,
    counted,
    lake_config,
    positive_int,
    print_json,
    read_home,
    resolve_home,
)

if TYPE_CHECKING:
    from traces.store.lake import LakeConfig
    from traces.store.lake.push import PushReport

_WHERE = "the lake: --lake=URL, else <home>/lake.toml (docs/team.md)"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from workbench.cli.run_filters import when

    push = subparsers.add_parser(
        "push",
        help="append finished runs to the team's lake (idempotent: pushing twice adds nothing)",
    )
    push.add_argument("runs", nargs="*", metavar="RUN", help="run ids or unique prefixes")
    push.add_argument("--all", action="store_true", help="every finished run of the home")
    push.add_argument(
        "--since", type=when, metavar="TIME", help="finished runs started since TIME (1d, 6h, ISO)"
    )
    push.add_argument(
        "--batch-events",
        type=positive_int,
        metavar="N",
        help="about N events a lake commit (default 50,000: a commit costs a second or so, "
        "so bigger batches push faster; a push cut short redoes at most one batch)",
    )
    push.add_argument("--json", action="store_true", help="what was pushed, as JSON")
    add_home(push)
    push.set_defaults(func=cmd_push)

    pull = subparsers.add_parser(
        "pull", help="bring runs, and their annotations, from the team's lake into the home"
    )
    pull.add_argument("runs", nargs="+", metavar="RUN", help="run ids or unique prefixes")
    add_home(pull)
    pull.set_defaults(func=cmd_pull)

    lake = subparsers.add_parser("lake", help="the team's lake: status, compaction")
    commands = lake.add_subparsers(dest="lake_command", metavar="COMMAND", required=True)
    status = commands.add_parser("status", help=f"what {_WHERE} holds")
    status.add_argument("--json", action="store_true", help="as JSON")
    add_home(status)
    status.set_defaults(func=cmd_status)
    compact = commands.add_parser(
        "compact",
        help="the lake's one deleting job (cron it): retention, superseded rows, small files",
    )
    compact.add_argument(
        "--older-than",
        type=when,
        metavar="AGE",
        help="remove runs started before AGE ago (90d) or before a date",
    )
    add_home(compact)
    compact.set_defaults(func=cmd_compact)


def cmd_push(args: argparse.Namespace) -> int:
    from traces.home import home_redactor
    from traces.store import lake
    from workbench.cli.progress import StderrProgress
    from workbench.cli.read_cmds import open_store

    if not args.runs and not args.all and args.since is None:
        raise CliError("push which runs? name them, or give --all or --since")
    home = read_home(args)
    config = lake_config(args, home)
    redactor = home_redactor(home)  # a pattern that does not compile is said before any work
    lake.choose(None)  # --lake names where to push; the runs come from the home's store
    progress = StderrProgress()
    try:
        with open_store(args) as store:
            chosen = [store.resolve_run(ref) for ref in args.runs] if args.runs else None
            report = store.push(config, chosen, args.since, progress, args.batch_events,
                                redactor=redactor)  # fmt: skip
    except lake.LakeError as exc:
        raise CliError(str(exc)) from None
    finally:
        progress.close()
    if args.json:
        print_json(report.__dict__ | {"lake": config.label})
    else:
        print(push_summary(report, config.label))
    return ExitCode.OK


def add_push(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--push",
        action="store_true",
        help=f"push {what} to the team's lake as it ends (--lake=URL, else <home>/lake.toml; "
        "docs/team.md); a push that fails is one line, the run stays recorded in the home",
    )


def push_config(args: argparse.Namespace, home: Path) -> LakeConfig | None:
    """The lake `--push` pushes to, checked before any work; None without --push."""
    return lake_config(args, home) if args.push else None


def push_runs(config: LakeConfig, home: Path, run_ids: list[str]) -> bool:
    """Push these finished runs of the home to the lake, saying so in one line on stderr;
    False (and why, in one line) when the push failed: the runs stay in the home."""
    from traces.home import RedactionConfigError, home_redactor
    from traces.store import StoreError, TraceStore, lake

    lake.choose(None)  # the runs come from the home's store
    try:
        with TraceStore.for_home(home) as store:
            store.ingest_home(home)
            report = store.push(config, run_ids, redactor=home_redactor(home))
    except (StoreError, RedactionConfigError) as exc:
        print(f"workbench: not pushed (the runs stay in {home}): {exc}", file=sys.stderr)
        return False
    print(push_summary(report, config.label), file=sys.stderr)
    return True


def push_summary(report: PushReport, label: str) -> str:
    extra = [
        counted(report.annotations, "annotation") if report.annotations else "",
        counted(report.suite_runs, "suite run") if report.suite_runs else "",
        f"{report.up_to_date} already there" if report.up_to_date else "",
    ]
    return (
        f"pushed {counted(report.runs, 'run')} ({counted(report.events, 'event')}) to {label}"
        + "".join(f"; {part}" for part in extra if part)
    )


def cmd_pull(args: argparse.Namespace) -> int:
    from traces.store import AmbiguousRunError, StoreError, TraceStore, UnknownRunError, lake
    from traces.store.lake.pull import pull

    home = resolve_home(args)
    config = lake_config(args, home)
    lake.choose(None)
    try:
        with TraceStore.over_lake(config) as store:
            report = pull(store, home, args.runs)
    except StoreError as exc:
        raise CliError(str(exc)) from None
    except (UnknownRunError, AmbiguousRunError) as exc:
        raise CliError(f"{exc.args[0]} (in the lake {config.label})") from None
    extra = [
        counted(report.annotations, "annotation") if report.annotations else "",
        f"{len(report.present)} already there" if report.present else "",
        f"{counted(report.unreadable, 'annotation')} left in the lake: written by a newer "
        "workbench (upgrade agent-workbench to pull them)"
        if report.unreadable
        else "",
    ]
    print(
        f"pulled {counted(len(report.written), 'run')} ({counted(report.events, 'event')}) "
        f"into {home}" + "".join(f"; {part}" for part in extra if part)
    )
    return ExitCode.OK


def cmd_status(args: argparse.Namespace) -> int:
    from traces.store import StoreError, lake
    from traces.store.lake.reading import lake_status

    config = lake_config(args, resolve_home(args))
    lake.choose(None)
    try:
        found = lake_status(config)
    except StoreError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print_json(found)
        return ExitCode.OK
    width = max(len(key) for key in found)
    for key, value in found.items():
        print(f"{key.replace('_', ' '):<{width}}  {'-' if value is None else value}")
    return ExitCode.OK


def cmd_compact(args: argparse.Namespace) -> int:
    from traces.store import StoreError, lake
    from traces.store.lake.compact import compact

    config = lake_config(args, resolve_home(args))
    lake.choose(None)
    try:
        report = compact(config, args.older_than)
    except StoreError as exc:
        raise CliError(str(exc)) from None
    print(
        f"compacted {config.label}: {counted(report.runs_removed, 'run')} past retention "
        f"removed, {counted(report.superseded_rows, 'superseded run row')} and "
        f"{counted(report.duplicate_events, 'doubled event')} dropped",
        file=sys.stdout,
    )
    return ExitCode.OK
