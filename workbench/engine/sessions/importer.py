"""`workbench import claude-code|codex [PATH]`: every session file under PATH as runs in a
home. A bad line is a problem line and the rest of its file still goes in; a session whose
records do not make a run is a problem line and the other files still go in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

from pydantic import ValidationError

from traces.reader import describe_validation_error
from workbench.engine.recording.runs.imported import ImportedRun, write_imported
from workbench.engine.sessions import claude_code, codex
from workbench.engine.sessions.session import SessionError, SessionRun

SessionKind: TypeAlias = Literal["claude-code", "codex"]
DEFAULT_ROOTS: dict[SessionKind, Path] = {
    "claude-code": claude_code.DEFAULT_ROOT,
    "codex": codex.DEFAULT_ROOT,
}
_WHAT: dict[SessionKind, str] = {
    "claude-code": "Claude Code transcripts (<project>/<session>.jsonl)",
    "codex": "Codex rollouts (rollout-*.jsonl)",
}


@dataclass
class SessionImport:
    """One run imported (or found imported before) and what its file held."""

    run: ImportedRun
    file: Path
    parent_run_id: str | None
    unknown_types: dict[str, int]


@dataclass
class ImportReport:
    files: int = 0
    runs: list[SessionImport] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def import_sessions(kind: SessionKind, root: Path | None, home: Path) -> ImportReport:
    """Import every session of `kind` under `root` (default: the CLI's own folder). Raises
    SessionError when `root` does not exist or holds no session file."""
    where = (root or DEFAULT_ROOTS[kind]).expanduser()
    if not where.exists():
        raise SessionError(f"{where}: no such file or folder (where {_WHAT[kind]} are)")
    finder: Callable[[Path], list[Path]]
    reader: Callable[[Path], tuple[list[SessionRun], list[str]]]
    if kind == "claude-code":
        finder, reader = claude_code.session_files, claude_code.read_session
    else:
        finder, reader = codex.session_files, codex.read_rollout
    files = finder(where)
    if not files:
        raise SessionError(f"{where}: no {_WHAT[kind]} found")
    report = ImportReport(files=len(files))
    for path in files:
        try:
            runs, problems = reader(path)
        except SessionError as exc:
            report.problems.append(str(exc))
            continue
        report.problems += problems
        for run in runs:
            if not run.turns:
                report.problems.append(f"{run.meta['file']}: no answer of the model; no run")
                continue
            try:
                events = run.events()
            except ValueError as exc:  # pydantic's ValidationError is a ValueError
                why = describe_validation_error(exc) if isinstance(exc, ValidationError) else exc
                report.problems.append(f"{run.meta['file']}: does not make a run ({why})")
                continue
            written = write_imported(home, events)
            report.runs.append(SessionImport(written, path, run.parent_run_id, run.unknown_types()))
    return report
