"""Helpers shared by the CLI command modules."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from traces.home import RedactionConfigError, home_dir, home_redactor, traces_dir
from traces.redact import Redactor

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


def writable_home(home: Path) -> Path:
    """The home, with its traces folder created; a home that cannot be written is one line
    (a read-only disk, a parent that is a file, no permission), not an `OSError`."""
    folder = traces_dir(home)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(
            f"cannot create {folder} ({exc.strerror or exc}); choose a writable folder with "
            "--home or $WORKBENCH_HOME"
        ) from None
    if not os.access(folder, os.W_OK):
        raise CliError(
            f"{folder} is not writable (a read-only disk or folder); choose a writable "
            "folder with --home or $WORKBENCH_HOME"
        )
    return home


def redactor_for(home: Path, secrets: Sequence[str | None] | None = None) -> Redactor:
    """The home's redaction (configured patterns) plus the secrets this command uses."""
    try:
        return home_redactor(home, secrets or [])
    except RedactionConfigError as exc:
        raise CliError(str(exc)) from None


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, default=str, ensure_ascii=False) + "\n")


def text_or_file(value: str) -> str:
    """`TEXT` or `@FILE`, as the --system, --user and --tool-description flags take."""
    if value.startswith("@"):
        path = Path(value[1:])
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror}") from exc
    return value


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


def add_mcp_start_timeout(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--mcp-start-timeout",
        type=positive_float,
        default=10.0,
        metavar="SECONDS",
        help="how long each MCP server has to start and list its tools (default 10)",
    )
