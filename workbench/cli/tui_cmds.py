"""`workbench tui [--home DIR]` — open the Textual workbench (also what bare `workbench` does).

Textual is imported inside the handler only, so every other command starts without it.
"""

from __future__ import annotations

import argparse

from workbench.cli.common import add_home, resolve_home
from workbench.cli.model_flags import add_model_flags, model_settings


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "tui",
        help="open the interactive workbench (runs, decision chains, replay, diffs, forks)",
        description="Open the interactive workbench on the runs of the home folder.",
    )
    add_home(parser)
    add_model_flags(parser)  # the default model endpoint of the fork dialog
    parser.set_defaults(func=run_tui)


def run_tui(args: argparse.Namespace) -> int:
    from workbench.tui import run_app

    return run_app(resolve_home(args), model_settings(args))
