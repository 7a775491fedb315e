"""Review commands: `note` (labels, scores and a text on a run, a turn or a tool call).

Thin: parse, call `workbench.engine.review`, print. The annotations are files under
`<home>/annotations/` (see docs/review.md); every read command ingests them.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from workbench.cli.common import CliError, add_home, print_json, read_home
from workbench.cli.read_cmds import open_store

if TYPE_CHECKING:
    from workbench.engine.review.notes import Target


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    note = subparsers.add_parser(
        "note",
        help="annotate a run, a turn or a tool call: labels, scores, a note",
        description=(
            "Attach labels, named scores and a note to a run (RUN), one of its turns "
            "(RUN:TURN) or one tool call (RUN:TURN:CALL_ID). Each note is appended to "
            "<home>/annotations/<author>.jsonl; --remove appends a tombstone. See docs/review.md."
        ),
    )
    note.add_argument("target", metavar="RUN[:TURN[:CALL_ID]]", help="what the note is on")
    note.add_argument(
        "--label", action="append", default=[], metavar="L", help="a label (repeatable)"
    )
    note.add_argument(
        "--score",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a named score, a number (repeatable), e.g. --score helpful=0.5",
    )
    note.add_argument("--text", metavar="TEXT", help="the note's text")
    note.add_argument(
        "--author",
        metavar="A",
        help="who writes it (default: $WORKBENCH_AUTHOR, else git's user.name, else the login)",
    )
    note.add_argument(
        "--remove", metavar="ID", help="remove the annotation ID (appends a tombstone)"
    )
    note.add_argument(
        "--list", action="store_true", help="list the run's annotations (with their ids)"
    )
    note.add_argument("--json", action="store_true", help="print the record written as JSON")
    add_home(note)
    note.set_defaults(func=cmd_note)


def cmd_note(args: argparse.Namespace) -> int:
    from workbench.engine.review.notes import (
        NoteError,
        Target,
        add_note,
        author_name,
        parse_score,
        remove_note,
    )

    home = read_home(args)
    try:
        target = Target.parse(args.target)
        if args.list:
            return _list(args, target)
        scores = dict(parse_score(text) for text in args.score)
        writes = bool(args.label or scores or args.text)
        if args.remove and writes:
            raise NoteError("--remove takes no --label, --score or --text: it only removes")
        author = author_name(args.author, home)
        with open_store(args) as store:
            if args.remove:
                removal, path = remove_note(home, store, target, author, args.remove)
                record: Any = removal
                said = f"removed {args.remove} from run {removal.run_id[:12]}"
            else:
                note, path = add_note(home, store, target, author, args.label, scores, args.text)
                record = note
                where = Target(note.run_id, note.turn, note.call_id).describe()
                said = f"noted {note.id} on {where}"
    except NoteError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print_json(record.model_dump(mode="json", exclude_none=True) | {"file": str(path)})
    else:
        print(f"{said} (by {record.author}, in {path})")
    return 0


def _list(args: argparse.Namespace, target: Target) -> int:
    with open_store(args) as store:
        run_id = store.resolve_run(target.run)
        rows = [
            row
            for row in store.annotations(run_id)
            if (target.turn is None or row["turn"] == target.turn)
            and (target.call_id is None or row["call_id"] == target.call_id)
        ]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print(f"no annotations on run {run_id[:12]}")
        return 0
    from workbench.engine.review.notes import annotation_line

    for row in rows:
        print(annotation_line(row))
    return 0
