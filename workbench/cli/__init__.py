"""The `workbench` command. Bare `workbench` opens the TUI.

Each group of subcommands lives in its own module with a `register(subparsers)` function;
handlers return the exit code and raise `CliError` for a one-line failure.

Every command builds the whole parser, so every module in `COMMAND_MODULES` is imported on
every start: keep their module-level imports light (argparse, `workbench.cli.common`,
`model_flags`, the standard library) and import what a handler needs inside the handler
(the store, the event models, the agent, the engine, openai, mcp, aiohttp, textual), with
`if TYPE_CHECKING:` imports for annotations. `tests/test_startup.py` checks that building
the parser loads none of them, and `bench/startup.py` times the common commands.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from traces.home import RedactionConfigError
from workbench.cli import bundle_cmds
from workbench.cli.common import (
    EXIT_CODES,
    CliError,
    CommandParser,
    ExitCode,
    SetupError,
    add_lake,
)

# Modules that add subcommands, in the order they appear in --help.
COMMAND_MODULES = (
    "workbench.cli.read_cmds",
    "workbench.cli.explore_cmds",
    "workbench.cli.run_cmds",
    "workbench.cli.mcp_cmds",
    "workbench.cli.mcp_serve_cmds",
    "workbench.cli.engine_cmds",
    "workbench.cli.proxy_cmds",
    "workbench.cli.test_cmds",
    "workbench.cli.tui_cmds",
    "workbench.cli.web_cmds",
    "workbench.cli.interop_cmds",
    "workbench.cli.bundle_cmds",
    "workbench.cli.import_cmds",
    "workbench.cli.stats_cmds",
    "workbench.cli.session_cmds",
    "workbench.cli.analysis_cmds",
    "workbench.cli.compare_cmds",
    "workbench.cli.review_cmds",
    "workbench.cli.judge_cmds",
    "workbench.cli.check_cmds",
    "workbench.cli.lake_cmds",
)


def choose_lake(args: argparse.Namespace) -> None:
    """Every store this command opens is the lake when it says --lake (each call of main
    says it again, as for --progress); the lake extra must be there for it."""
    if args.lake is None:
        chosen = sys.modules.get("traces.store.lake")  # not imported: nothing chosen
        if chosen is not None:
            chosen.choose(None)
        return
    from traces.store import lake
    from traces.store.lake.connect import check_installed

    try:
        check_installed()
    except lake.LakeError as exc:
        raise CliError(str(exc)) from None
    lake.choose(args.lake)


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="workbench",
        description=(
            "Trace-and-replay workbench for LLM agents. Run `workbench` alone to open the "
            "TUI, or `workbench demo` to record example runs offline and explore them."
        ),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--home",
        default=None,
        help="workbench folder (default: $WORKBENCH_HOME, else ./.workbench)",
    )
    parser.add_argument(
        "--no-color",
        action="store_true",
        help="no colour in any output (also: NO_COLOR set; output that is not a terminal has none)",
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        help=(
            "progress lines on stderr even when it is not a terminal (a CI log); a terminal "
            "gets a bar past a second's work, scripts and pipes nothing (also after COMMAND)"
        ),
    )
    add_lake(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if bundle_cmds.tui_bundle(given) is not None:
        # `workbench FILE` (a --home before it is not needed): the TUI on the bundle's runs.
        return bundle_cmds.open_tui(Path(given[-1]))
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args([*(sys.argv[1:] if argv is None else argv), "tui"])
    # Each call of main says it again: a caller that runs several commands in one process
    # (tests, the pytest plugin) gets progress off a terminal only for those that asked.
    from workbench.cli.progress import show_off_terminal

    show_off_terminal(args.progress)
    try:
        choose_lake(args)
        return int(args.func(args) or 0)
    except CliError as exc:
        print(f"workbench: {exc}", file=sys.stderr)
        return exc.exit_code
    except SetupError as exc:  # raised by the engine when a run cannot be set up
        print(f"workbench: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except RedactionConfigError as exc:  # a bad pattern, met where a trace is opened
        print(f"workbench: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print("workbench: interrupted", file=sys.stderr)
        return ExitCode.CANCELLED
    except BrokenPipeError:
        return 0
