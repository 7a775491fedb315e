"""`workbench tui [--home DIR]` — open the Textual workbench (also what bare `workbench` does).

Textual is imported inside the handler only, so every other command starts without it.
"""

from __future__ import annotations

import argparse
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.cli.common import CliError, add_home, read_home
from workbench.cli.model_flags import add_model_flags, model_settings

if TYPE_CHECKING:
    from workbench.engine.recording.running.service import ModelSettings
    from workbench.engine.review.queue import QueueSpec


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "tui",
        help="open the interactive workbench (runs, decision chains, replay, diffs, forks)",
        description="Open the interactive workbench on the runs of the home folder.",
    )
    add_home(parser)
    add_model_flags(parser)  # the default model endpoint of the fork dialog
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="browse only: forks and exports are refused (new traces are still picked up)",
    )
    parser.set_defaults(func=run_tui)


def run_tui(args: argparse.Namespace) -> int:
    """A home named by --home or $WORKBENCH_HOME must exist (a typo is one line, not a new
    empty store there); the default ./.workbench is made on first use. A home that cannot
    be written opens read-only."""
    home = read_home(args, make_default=True)
    writes_off = None
    if args.read_only:
        writes_off = (
            "served read-only (start workbench web with --allow-writes to fork and export)"
            if served()
            else "opened with --read-only"
        )
    if served():
        # Its keys, Ctrl-C too, come from the browser; a SIGINT is the server's terminal's,
        # which stops the server, which ends this app (Textual's web driver handles the
        # signal itself once started: until then it would be a traceback).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return open_app(home, model_settings(args), writes_off=writes_off)


def open_app(
    home: Path,
    endpoint: ModelSettings | None = None,
    review: QueueSpec | None = None,
    author: str | None = None,
    writes_off: str | None = None,
) -> int:
    """The TUI on `home` (on the review queue `review` when given: `workbench review`);
    with `writes_off` (why), forks and exports are refused."""
    from traces.store import StoreError
    from workbench.tui import run_app

    try:
        return run_app(home, endpoint, review=review, author=author, writes_off=writes_off)
    except StoreError as exc:  # before the terminal is taken: nothing to show at all
        raise CliError(str(exc)) from None


def served() -> bool:
    """Whether textual-serve started this app for a browser (`workbench web`): it names
    Textual's web driver in the app's environment."""
    return os.environ.get("TEXTUAL_DRIVER", "").endswith(":WebDriver")
