"""`workbench import`: runs recorded elsewhere, brought into the home.

`import claude-code [PATH]` reads Claude Code's transcripts, `import codex [PATH]` Codex
CLI's rollouts as imported runs (docs/capture.md, "Importing session files");
`import bundle FILE` adds the runs of a `workbench bundle` file, its handler in
`workbench.cli.bundle_cmds` (docs/replay.md). The engine is imported inside the handlers
only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.cli import bundle_cmds
from workbench.cli.common import CliError, add_home, print_json, resolve_home

IMPORT_HELP = """\
Add runs recorded elsewhere to the home. `bundle FILE` adds the runs of a `workbench bundle`
file. `claude-code` and `codex` read other tools' records of agent runs as imported runs
(read-only, like OpenTelemetry imports): they open in the TUI, show, diff, search and feed
regression cases.
Importing a session again writes nothing. A bad line is reported with its file and line
number and the rest still goes in; record types the reader does not know are kept in the
run (`run_start.meta.session`) and counted.
"""

SESSION_HELP = {
    "claude-code": (
        "Claude Code transcripts: PATH is a <session>.jsonl, a project folder or the projects "
        "folder (default ~/.claude/projects). Each session is a run; each sub-agent's "
        "sidechain a run whose parent is the session's."
    ),
    "codex": (
        "Codex CLI rollouts: PATH is a rollout-*.jsonl or any folder above them (default "
        "~/.codex/sessions). Each rollout is a run."
    ),
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "import",
        help="add runs recorded elsewhere: a bundle, Claude Code or Codex session files",
        description=IMPORT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_home(parser)
    kinds = parser.add_subparsers(dest="import_kind", metavar="KIND", required=True)
    for kind, help_text in SESSION_HELP.items():
        sessions = kinds.add_parser(kind, help=help_text.split(":")[0], description=help_text)
        sessions.add_argument("path", nargs="?", metavar="PATH", help="a file or a folder")
        sessions.add_argument("--json", action="store_true", help="print the runs as JSON")
        add_home(sessions)
        sessions.set_defaults(func=cmd_import_sessions, session_kind=kind)
    bundle_cmds.register_import(kinds)


def cmd_import_sessions(args: argparse.Namespace) -> int:
    from workbench.engine.sessions.importer import import_sessions
    from workbench.engine.sessions.session import SessionError

    home = resolve_home(args)
    try:
        report = import_sessions(args.session_kind, Path(args.path) if args.path else None, home)
    except SessionError as exc:
        raise CliError(str(exc)) from None
    for problem in report.problems:
        print(f"workbench import: {problem}", file=sys.stderr)
    if args.json:
        print_json(
            [
                {
                    **item.run.__dict__,
                    "path": str(item.run.path),
                    "file": str(item.file),
                    "parent_run_id": item.parent_run_id,
                    "unknown_types": item.unknown_types,
                }
                for item in report.runs
            ]
        )
        return 0
    for item in report.runs:
        run = item.run
        verb = "imported" if run.written else "already imported"
        parent = f", sub-agent of {item.parent_run_id[:12]}" if item.parent_run_id else ""
        line = f"{verb} run {run.run_id[:12]} ({run.status}, {run.turns} turn(s){parent})"
        unknown = ", ".join(f"{kind} ×{n}" for kind, n in item.unknown_types.items())
        print(line + (f"; kept records of unknown types: {unknown}" if unknown else ""))
    written = sum(item.run.written for item in report.runs)
    print(
        f"{written} run(s) imported, {len(report.runs) - written} already there, from "
        f"{report.files} file(s)"
        + (f"; {len(report.problems)} problem(s) on stderr" if report.problems else "")
    )
    return 0


__all__ = ["register"]
