"""Where the workbench keeps its files: `$WORKBENCH_HOME`, else `./.workbench`; the
redaction every trace written there gets; and `open_run_trace`, the one way a run is
recorded in a home, so no writer can leave that redaction out."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from traces.redact import Redactor

if TYPE_CHECKING:
    from traces.writer import JsonlWriter

# User-configured secret patterns: one regular expression per line in this file of the
# home folder ('#' starts a comment), and/or in this environment variable (one per line).
REDACT_FILE = "redact-patterns.txt"
REDACT_ENV = "WORKBENCH_REDACT_PATTERNS"


class RedactionConfigError(ValueError):
    """A configured pattern is not a valid regular expression."""


def home_dir(override: str | Path | None = None) -> Path:
    if override:
        return Path(override)
    return Path(os.environ.get("WORKBENCH_HOME") or ".workbench")


class NoHomeError(ValueError):
    """A command that only reads was pointed at a home folder that does not exist."""


def existing_home(home: Path) -> Path:
    """The home, if its folder exists. Commands that only read call this, so that a
    mistyped --home says so instead of making a new, empty store there."""
    if not home.is_dir():
        raise NoHomeError(
            f"no workbench home at {home} (check --home or $WORKBENCH_HOME); "
            "`workbench run`, `workbench demo` or `workbench ingest PATH` makes one"
        )
    return home


def ambiguous_run(prefix: str, run_ids: Sequence[str]) -> str:
    """What every command says when a run id prefix matches several runs."""
    shown = ", ".join(run_id[:12] for run_id in run_ids[:5])
    more = f" and {len(run_ids) - 5} more" if len(run_ids) > 5 else ""
    return (
        f"run id {prefix!r} matches {len(run_ids)} runs ({shown}{more}); give more characters of it"
    )


TRACES_FOLDER = "traces"


def traces_dir(home: Path) -> Path:
    return home / TRACES_FOLDER


def db_path(home: Path) -> Path:
    return home / "workbench.duckdb"


def redaction_patterns(home: Path) -> list[str]:
    """The configured patterns, each checked to compile; errors name file and line."""
    sources: list[tuple[str, str]] = []
    path = home / REDACT_FILE
    if path.is_file():
        from traces.user_files import read_text

        try:
            text = read_text(path)
        except OSError as exc:
            raise RedactionConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
        for number, line in enumerate(text.splitlines(), 1):
            sources.append((f"{path}:{number}", line))
    for number, line in enumerate(os.environ.get(REDACT_ENV, "").splitlines(), 1):
        sources.append((f"${REDACT_ENV} line {number}", line))
    patterns: list[str] = []
    for where, line in sources:
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        try:
            re.compile(pattern)
        except re.error as exc:
            raise RedactionConfigError(
                f"{where}: not a valid regular expression ({exc}); fix or remove it"
            ) from None
        patterns.append(pattern)
    return patterns


def home_redactor(home: Path, secrets: Iterable[str | None] = ()) -> Redactor:
    """What every trace written for this home is redacted with: the secrets in use (API
    keys, MCP header values) and the home's configured patterns."""
    return Redactor([s for s in secrets if s], redaction_patterns(home))


def open_run_trace(home: Path, run_id: str, secrets: Iterable[str | None] = ()) -> JsonlWriter:
    """The trace of run `run_id` in `home` (`<home>/traces/<run_id>.jsonl`), redacted with
    `home_redactor(home, secrets)`; the writer's `redactor` takes secrets learnt later.
    Raises RedactionConfigError for a configured pattern that does not compile."""
    from traces.writer import JsonlWriter  # the event models, only for commands that write

    return JsonlWriter(traces_dir(home), run_id, home_redactor(home, secrets))


# A home's folder of annotations: JSON Lines, but not traces (ingest leaves it out).
ANNOTATIONS_FOLDER = "annotations"


def annotations_dir(home: Path) -> Path:
    """Where annotations live: one append-only `<author>.jsonl` per author
    (`traces.annotations`)."""
    return home / ANNOTATIONS_FOLDER
