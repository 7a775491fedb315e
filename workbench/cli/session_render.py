"""How `workbench show --session ID` prints a session: its totals, then its runs in the
order they ran (`workbench.engine.views.sessions` finds them)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from traces.origins import kind_label
from workbench.cli.common import Paint, color_wanted, print_json

if TYPE_CHECKING:
    from traces.store import RunRow, TraceStore


def when_text(value: object) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if hasattr(value, "strftime") else "-"


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
    first, last = when_text(row.first_at), when_text(row.last_at)
    print(f"{paint('from', 'dim')} {first}  {paint('to', 'dim')} {last}")
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
        f"{run.turns:>3} turns  {run.total_tokens:>7} tokens  {when_text(run.started_at)}  "
        f"{task[:60]}"
    )
