"""Helpers shared by the CLI command modules."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from traces.home import RedactionConfigError, home_dir, home_redactor
from traces.redact import Redactor
from workbench.engine.run_service import SetupError as SetupError
from workbench.engine.run_service import text_or_file as text_or_file

T = TypeVar("T", int, float)


class CliError(Exception):
    """A failure shown as one line on stderr, with an exit code."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def add_home(parser: argparse.ArgumentParser) -> None:
    """Accept --home after the subcommand too (it is also a global option)."""
    parser.add_argument(
        "--home",
        default=argparse.SUPPRESS,
        help="workbench folder (default: $WORKBENCH_HOME, else ./.workbench)",
    )


def resolve_home(args: argparse.Namespace) -> Path:
    return home_dir(getattr(args, "home", None))


def redactor_for(home: Path, secrets: Sequence[str | None] | None = None) -> Redactor:
    """The home's redaction (configured patterns) plus the secrets this command uses."""
    try:
        return home_redactor(home, secrets or [])
    except RedactionConfigError as exc:
        raise CliError(str(exc)) from None


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, default=str, ensure_ascii=False) + "\n")


def _positive(convert: Callable[[str], T], what: str) -> Callable[[str], T]:
    """An argparse type: `convert`, refusing anything not greater than 0."""

    def parse(text: str) -> T:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError("must be greater than 0")
        return value

    return parse


positive_int = _positive(int, "a whole number")
positive_float = _positive(float, "a number of seconds")
