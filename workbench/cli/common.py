"""Helpers shared by the CLI command modules."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from traces.home import (
    NoHomeError,
    RedactionConfigError,
    existing_home,
    home_dir,
    home_redactor,
    traces_dir,
)
from traces.redact import Redactor
from workbench.engine.recording.running.service import SetupError as SetupError
from workbench.engine.recording.running.service import text_or_file as text_or_file

# The number types every command's flags use (shared with the pytest plugin's options).
from workbench.number_args import fraction as fraction
from workbench.number_args import port_number as port_number
from workbench.number_args import positive_float as positive_float
from workbench.number_args import positive_int as positive_int

if TYPE_CHECKING:
    from traces.prices import Prices
    from traces.store.lake import LakeConfig
    from workbench.engine.recording.runs.load import Recording
    from workbench.engine.recording.runs.parent import ParentRun


class ExitCode(IntEnum):
    """What every `workbench` command exits with (`EXIT_CODES` says it to users)."""

    OK = 0
    FAILED = 1  # a check failed, or a limit stopped the run
    USAGE = 2  # a usage or setup error: nothing ran
    RUN_ERROR = 3  # the run ended with status error, its trace was cut, or a capture lost
    CANCELLED = 130  # Ctrl-C


# The one exit-code table: `workbench --help` and `workbench run --help` show it, and the
# README repeats it (tests/test_readme.py checks that it does).
EXIT_CODES = """\
exit codes (every command):
  0    ok: the run completed, the check passed
  1    a check failed (replay diverged, a case failed, runs differ) or a limit stopped the
       run (max_turns, duplicate_tool_calls, token_budget, timeout)
  2    usage or setup error (bad flag, no model configured, unreadable file); nothing ran
  3    the run ended with status error (e.g. the model call failed after its retries), or
       its trace could not be written whole (a full disk; it ends at its last whole event);
       for proxy and collect: a capture was not recorded (a second Ctrl-C, a full disk;
       stderr says which)
  130  cancelled (Ctrl-C); a run's trace still ends with run_end status cancelled
"""

# A run's end status as an exit code.
STATUS_EXIT: dict[str, ExitCode] = {
    "completed": ExitCode.OK,
    "max_turns": ExitCode.FAILED,
    "duplicate_tool_calls": ExitCode.FAILED,
    "token_budget": ExitCode.FAILED,
    "timeout": ExitCode.FAILED,
    "error": ExitCode.RUN_ERROR,
    "cancelled": ExitCode.CANCELLED,
}


# argparse's words for a subcommand or choice that is not one of them.
_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")
_QUOTED = re.compile(r"'([^']*)'")


class CommandParser(argparse.ArgumentParser):
    """A parser whose argument errors are one line naming the command, what is wrong and
    where its --help is (exit 2), not argparse's usage block. Subparsers are made with the
    parser's own class, so every command gets it; --help is argparse's, unchanged. Flags
    are never guessed from their beginning (`--api` is not `--api-key`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        hint = self._did_you_mean(message)
        self.exit(ExitCode.USAGE, f"{self.prog}: {message}{hint}; see `{self.prog} --help`\n")

    def _did_you_mean(self, message: str) -> str:
        """The command or flag a mistyped one was most likely meant to be (`shwo`: show,
        `--faild`: --failed), from argparse's own message; "" when none is close."""
        import difflib

        choice = _INVALID_CHOICE.search(message)
        if choice:
            wrong, known = choice[1], _QUOTED.findall(choice[2])
        else:
            extra = message.removeprefix("unrecognized arguments: ")
            flags = [word.split("=")[0] for word in extra.split() if word.startswith("--")]
            if extra == message or not flags:
                return ""
            wrong, known = flags[0], list(self._option_string_actions)
        close = difflib.get_close_matches(wrong, known, n=1, cutoff=0.6)
        return f" (did you mean {close[0]}?)" if close else ""

    def parse_args(  # type: ignore[override]  # always a Namespace, never None
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        args = lake_flags(sys.argv[1:] if args is None else args)
        parsed, extra = self.parse_known_args(args, namespace)
        if "--progress" in extra:  # the global flag, given after the command
            extra.remove("--progress")
            parsed.progress = True
        if extra:  # argparse leaves these to the top parser: say which command had them
            self._command(parsed).error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed

    def _command(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The (sub)command parser that parsed `parsed`, the deepest one chosen."""
        parser: argparse.ArgumentParser = self
        while True:
            chosen = [
                action.choices[name]
                for action in parser._actions
                if isinstance(action, argparse._SubParsersAction)
                and (name := getattr(parsed, action.dest, None)) in action.choices
            ]
            if not chosen:
                return parser
            parser = chosen[0]


class CliError(Exception):
    """A failure shown as one line on stderr, with an exit code."""

    def __init__(self, message: str, exit_code: int = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def add_server_flags(
    parser: argparse.ArgumentParser, *, port: int = 0, max_request_mb: int = 32
) -> None:
    """--host, --port, --max-request-mb and --read-timeout: the same for every server the
    workbench runs (`server_limits` reads the last two)."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=port_number,
        default=port,
        help=f"port (default {port}{': pick a free one' if port == 0 else ''})",
    )
    parser.add_argument(
        "--max-request-mb",
        type=positive_int,
        default=max_request_mb,
        metavar="MB",
        help=f"refuse larger request bodies with HTTP 413 (default {max_request_mb})",
    )
    parser.add_argument(
        "--read-timeout",
        type=positive_float,
        default=60.0,
        metavar="SECONDS",
        help="answer HTTP 408 and close the connection when a request's body has not all "
        "arrived this long after its headers (default 60)",
    )


def server_limits(args: argparse.Namespace) -> dict[str, Any]:
    """The request limits `add_server_flags` asked for, as every server takes them."""
    return {
        "max_request_bytes": args.max_request_mb * 1024 * 1024,
        "read_timeout_s": args.read_timeout,
    }


class Servable(Protocol):
    def serve_forever(self, on_ready: Callable[[], None] | None = None) -> str: ...

    def lost(self) -> bool: ...


def serve_until_stopped(
    server: Servable, ready: Callable[[], str], summary: Callable[[], str] | None = None
) -> int:
    """Serve in this thread until SIGTERM or Ctrl-C, which stop every server the same way:
    in order, with one line (`stopped`, and the server's `summary`) and exit code 0 — or 3
    when the server lost something it took in (a capture not recorded; it said which)."""
    server.serve_forever(lambda: print(ready(), flush=True))
    print("stopped" + (f"; {summary()}" if summary is not None else ""), flush=True)
    return ExitCode.RUN_ERROR if server.lost() else ExitCode.OK


def open_run(ref: str, home: Path) -> Recording | ParentRun:
    """A run to read as it is asked: from the store, a turn or a call at a time, when the
    home holds it (`workbench.engine.recording.runs.parent.open_run`), else a trace path or bundle
    read whole; a progress bar when ingesting new traces first takes a while."""
    from workbench.cli.progress import StderrProgress
    from workbench.engine.recording.runs.load import RecordingError
    from workbench.engine.recording.runs.parent import open_run as opened

    progress = StderrProgress()  # shown only when it takes over a second
    try:
        return opened(ref, home, progress)
    except RecordingError as exc:
        raise CliError(str(exc)) from None
    finally:
        progress.close()


def add_home(parser: argparse.ArgumentParser) -> None:
    """Accept --home and --lake after the subcommand too (they are also global options)."""
    parser.add_argument(
        "--home",
        default=argparse.SUPPRESS,
        help="workbench folder (default: $WORKBENCH_HOME, else ./.workbench)",
    )
    add_lake(parser, default=argparse.SUPPRESS)


LAKE_HELP = (
    "read the team's lake instead of the home's store: the one in <home>/lake.toml, or "
    "--lake=URL (a catalog with ?data=s3://BUCKET/PREFIX, or a lake.toml; docs/team.md)"
)


def add_lake(parser: argparse.ArgumentParser, default: Any = None, help: str = LAKE_HELP) -> None:
    parser.add_argument("--lake", default=default, metavar="URL", help=help)


# What a `--lake` value looks like, so that `show --lake RUN` reads RUN as the run.
_LAKE_URL = re.compile(r"://|dbname=|\?data=|\.(toml|ducklake|sqlite|db|duckdb)$")


def lake_flags(argv: Sequence[str]) -> list[str]:
    """`--lake` with its optional value made explicit for argparse: `--lake URL` when the
    next word is a lake's URL (`_LAKE_URL`), else `--lake=` (the home's lake.toml)."""
    out: list[str] = []
    words = list(argv)
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--lake":
            following = words[i + 1] if i + 1 < len(words) else ""
            if _LAKE_URL.search(following):
                out.append(f"--lake={following}")
                i += 2
                continue
            out.append("--lake=")
        else:
            out.append(word)
        i += 1
    return out


def lake_config(args: argparse.Namespace, home: Path) -> LakeConfig:
    """The lake `--lake` names (or the home's lake.toml); one line when there is none or
    the lake extra is not installed."""
    from traces.store.lake import LakeError
    from traces.store.lake.config import for_home
    from traces.store.lake.connect import check_installed

    try:
        check_installed()
        return for_home(home, getattr(args, "lake", None) or None)
    except LakeError as exc:
        raise CliError(str(exc)) from None


def resolve_home(args: argparse.Namespace) -> Path:
    return home_dir(getattr(args, "home", None))


def read_home(args: argparse.Namespace, make_default: bool = False) -> Path:
    """The home of a command that only reads it: one line, not a new empty store, when its
    folder does not exist (a mistyped --home). With `make_default`, the default home (no
    --home, no $WORKBENCH_HOME) is made on first use instead, as `workbench run` makes it."""
    home = resolve_home(args)
    named = getattr(args, "home", None) or os.environ.get("WORKBENCH_HOME")
    if make_default and not named and not home.is_dir():
        return writable_home(home)
    try:
        return existing_home(home)
    except NoHomeError as exc:
        raise CliError(str(exc)) from None


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


def counted(number: int, word: str, plural: str | None = None) -> str:
    """`1 turn`, `3 turns`: a count with its noun agreeing."""
    return f"{number} {word if number == 1 else plural or word + 's'}"


def load_prices(home: Path) -> Prices:
    """`<home>/prices.toml` (none when absent); a bad file is one line, before any work."""
    from traces.prices import Prices, PricesError

    try:
        return Prices.load(home)
    except PricesError as exc:
        raise CliError(str(exc)) from None


def priced(prices: Prices, model: str, input_tokens: int, output_tokens: int) -> str:
    """`$0.0123` for these tokens on `model`, or "" when it has no price."""
    return prices.format(prices.cost(model, input_tokens, output_tokens))


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, default=str, ensure_ascii=False) + "\n")


def add_mcp_start_timeout(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--mcp-start-timeout",
        type=positive_float,
        default=10.0,
        metavar="SECONDS",
        help="how long each MCP server has to start and list its tools (default 10)",
    )


# --- colour ----------------------------------------------------------------------------

_ANSI = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "cyan": "36",
    "match": "1;7",  # a search match: bold, reversed
}
# A run's status as the TUI colours it: green completed, red error, yellow a limit.
STATUS_STYLES = {"completed": "green", "error": "red", "incomplete": "dim", "cancelled": "dim"}


def add_no_color(parser: argparse.ArgumentParser) -> None:
    """Accept --no-color after the subcommand too (it is also a global option)."""
    parser.add_argument(
        "--no-color",
        action="store_true",
        default=argparse.SUPPRESS,
        help="no colour (also: NO_COLOR set; output that is not a terminal has none)",
    )


def color_wanted(args: argparse.Namespace) -> bool:
    """Colour only on a terminal, and never with --no-color or NO_COLOR (no-color.org)."""
    if getattr(args, "no_color", False) or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


class Paint:
    """ANSI styles when colour is wanted; the text unchanged otherwise."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, style: str | None) -> str:
        if not self.on or not style or not text:
            return text
        return f"\x1b[{_ANSI[style]}m{text}\x1b[0m"

    def status(self, text: str, status: str) -> str:
        """`text` (a status, maybe padded) in its status's colour."""
        return self(text, STATUS_STYLES.get(status.strip(), "yellow"))

    def matches(self, text: str, wanted: str) -> str:
        """`text` with every case-insensitive occurrence of `wanted` highlighted."""
        lowered, needle = text.lower(), wanted.lower()
        if not self.on or not needle or len(lowered) != len(text):
            return text  # (a letter whose lower case is longer would shift the offsets)
        parts: list[str] = []
        at = 0
        while (found := lowered.find(needle, at)) != -1:
            parts += [text[at:found], self(text[found : found + len(needle)], "match")]
            at = found + len(needle)
        return "".join(parts) + text[at:]
