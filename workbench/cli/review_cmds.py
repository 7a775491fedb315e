"""Review commands: `note` (labels, scores and a text on a run, a turn or a tool call) and
`review` (the TUI's review queue over the runs `workbench runs`' filters choose).

Thin: parse, call `workbench.engine.review`, print. The annotations are files under
`<home>/annotations/` (see docs/review.md); every read command ingests them.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from workbench.cli.common import CliError, add_home, load_prices, print_json, read_home
from workbench.cli.read_cmds import add_listing_flags, open_store
from workbench.cli.run_filters import add_run_filters, run_query

if TYPE_CHECKING:
    from traces.store import RunQuery
    from workbench.engine.review.notes import Target

# The flags that choose which runs a review walks; with none of them, the failed runs not
# reviewed yet.
_CHOOSING = ("failed", "status", "label", "unreviewed", "score", "signature")
# What the parsed flags hold besides filters.
_NOT_FILTERS = ("func", "command", "home", "author", "no_color", "progress")


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
    _add_author(note)
    note.add_argument(
        "--remove", metavar="ID", help="remove the annotation ID (appends a tombstone)"
    )
    note.add_argument(
        "--list", action="store_true", help="list the run's annotations (with their ids)"
    )
    note.add_argument("--json", action="store_true", help="print the record written as JSON")
    add_home(note)
    note.set_defaults(func=cmd_note)

    review = subparsers.add_parser(
        "review",
        help="review runs one at a time in the TUI: one key labels a run and moves on",
        description=(
            "Open the TUI on a review queue: the runs these filters choose (those of "
            "`workbench runs`), oldest first; with none of --failed, --status, --label, "
            "--unreviewed, --score or --signature, the failed runs nobody has reviewed yet. "
            "One key per label (<home>/labels.toml, else g good, b bad, w wrong-tool, l loop, "
            "h hallucination, a bad-arguments), n a note, s skip, u undo. See docs/review.md."
        ),
    )
    add_listing_flags(review)
    add_run_filters(review)
    _add_author(review)
    add_home(review)
    review.set_defaults(func=cmd_review)


def _add_author(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--author",
        metavar="A",
        help="who writes the notes (default: $WORKBENCH_AUTHOR, else git's user.name, else "
        "the login)",
    )


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


def cmd_review(args: argparse.Namespace) -> int:
    from workbench.engine.review.labels import LabelsError, load_labels
    from workbench.engine.review.notes import author_name
    from workbench.engine.review.queue import QueueSpec, open_queue

    home = read_home(args)
    try:
        load_labels(home)  # a bad labels file is one line before the terminal is taken
    except LabelsError as exc:
        raise CliError(str(exc)) from None
    author = author_name(args.author, home)
    name = _queue_name(args)
    with open_store(args) as store:
        spec = QueueSpec(_review_query(args, store), name)
        queue = open_queue(store, home, spec, author)
    if queue.current is None:
        print(f"nothing to review ({spec.name}): {queue.progress.text()}")
        return 0
    if not sys.stdout.isatty():
        raise CliError(
            f"workbench review needs a terminal (its output is not one); {len(queue.rows)} "
            "run(s) to review: `workbench runs` with the same filters lists them"
        )
    from workbench.cli.tui_cmds import open_app

    return open_app(home, review=spec, author=author)


def _review_query(args: argparse.Namespace, store: Any) -> RunQuery:
    query = run_query(args, load_prices(read_home(args)))
    if not any(getattr(args, name) for name in _CHOOSING):
        query = replace(query, failed_only=True, unreviewed=True)
    if args.signature and not store.count_runs(where=query):
        raise CliError(
            f"no failure group has the signature {args.signature!r}; "
            "`workbench failures` lists them"
        )
    return query


def _queue_name(args: argparse.Namespace) -> str:
    """The queue in words, from the filter flags given: what its position is remembered by."""
    given = []
    for name, value in sorted(vars(args).items()):
        if name in _NOT_FILTERS or value in (None, False, []):
            continue
        flag = "--" + name.replace("_", "-")
        for one in value if isinstance(value, list) else [value]:
            if hasattr(one, "strftime"):
                one = one.strftime("%Y-%m-%d")  # an age (7d) names the same queue all day
            elif isinstance(one, tuple):
                one = "".join(str(part) for part in one)  # a score: helpful<0.5
            given.append(flag if one is True else f"{flag} {one}")
    return "review " + (" ".join(given) if given else "--failed --unreviewed")
