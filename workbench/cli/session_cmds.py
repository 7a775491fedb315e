"""`workbench sessions` and `workbench show --session ID`: runs grouped by the conversation
or agent session they are part of (`run_start.meta.session_id`: `run --session`, the proxy,
session imports), each session with its totals and how its runs ended."""

from __future__ import annotations

import argparse

from workbench.cli.common import (
    Paint,
    add_home,
    add_no_color,
    color_wanted,
    positive_int,
    print_json,
)
from workbench.cli.session_render import when_text


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sessions = subparsers.add_parser(
        "sessions",
        help="runs grouped by conversation or agent session, latest first",
        description=(
            "Each session: its runs, when it started and last ended, its totals and how its "
            "runs ended. A run is part of a session by `workbench run --session NAME`, the "
            "proxy (the X-Workbench-Session header, Claude Code's or Codex's own session id, "
            "the conversation a follow-up continues) or `workbench import`. "
            "`workbench show --session ID` lists a session's runs in order."
        ),
    )
    sessions.add_argument(
        "--limit", type=positive_int, default=50, help="at most N sessions (default 50)"
    )
    sessions.add_argument("--json", action="store_true", help="print the sessions as JSON")
    add_no_color(sessions)
    add_home(sessions)
    sessions.set_defaults(func=cmd_sessions)


def cmd_sessions(args: argparse.Namespace) -> int:
    from workbench.cli.read_cmds import open_store
    from workbench.engine.views.sessions import statuses_text

    with open_store(args) as store:
        rows = store.sessions(limit=args.limit)
    if args.json:
        print_json([row.to_json() for row in rows])
        return 0
    if not rows:
        print(
            "no sessions yet: `workbench run --session NAME`, the proxy's X-Workbench-Session "
            "header or `workbench import claude-code|codex` make them"
        )
        return 0
    paint = Paint(color_wanted(args))
    print(
        paint(
            f"{'SESSION':<36}  {'RUNS':>4}  {'TURNS':>5}  {'TOKENS':>8}  "
            f"{'FIRST (UTC)':<19}  {'LAST (UTC)':<19}  STATUSES",
            "bold",
        )
    )
    for row in rows:
        print(
            f"{paint(f'{row.session[:36]:<36}', 'cyan')}  {row.runs:>4}  {row.turns:>5}  "
            f"{row.total_tokens:>8}  {when_text(row.first_at):<19}  {when_text(row.last_at):<19}  "
            f"{statuses_text(row.statuses)}"
        )
    return 0
