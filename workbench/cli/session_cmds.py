"""`workbench sessions` and `workbench show --session ID`: runs grouped by the conversation
or agent session they are part of (`run_start.meta.session_id`: `run --session`, the proxy,
session imports), each session with its totals and how its runs ended."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from traces.origins import kind_label
from workbench.cli.common import (
    Paint,
    add_home,
    add_no_color,
    color_wanted,
    positive_int,
    print_json,
)

if TYPE_CHECKING:
    from traces.store import RunRow, TraceStore


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


def _when(value: object) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if hasattr(value, "strftime") else "-"


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
            f"{row.total_tokens:>8}  {_when(row.first_at):<19}  {_when(row.last_at):<19}  "
            f"{statuses_text(row.statuses)}"
        )
    return 0


def show_session(args: argparse.Namespace, store: TraceStore) -> int:
    """`show --session ID`: the session's totals, then its runs in the order they ran."""
    from workbench.engine.views.sessions import session_summary, session_view

    view = session_view(store, args.session)
    if args.json:
        print_json(view.to_json())
        return 0
    paint = Paint(color_wanted(args))
    row = view.session
    print(f"{paint('session', 'dim')} {paint(row.session, 'bold')}  {session_summary(row)}")
    print(
        f"{paint('from', 'dim')} {_when(row.first_at)}  {paint('to', 'dim')} {_when(row.last_at)}"
    )
    print()
    for number, run in enumerate(view.runs, 1):
        print(_run_line(number, run, paint))
    if len(view.runs) < row.runs:
        print(f"… {row.runs - len(view.runs)} more runs (`workbench runs --session {row.session}`)")
    return 0


def _run_line(number: int, run: RunRow, paint: Paint) -> str:
    task = (run.task or "").replace("\n", " ")
    status = paint.status(f"{run.status:<20}", run.status)
    return (
        f"{number:>3}. {paint(run.run_id[:12], 'cyan')}  {status}  {kind_label(run.origin):<8}  "
        f"{run.turns:>3} turns  {run.total_tokens:>7} tokens  {_when(run.started_at)}  {task[:60]}"
    )
