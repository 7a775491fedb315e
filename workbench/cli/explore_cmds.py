"""`workbench search TEXT` (runs by what they said and did) and `workbench export RUN`
(a run as one JSON document, as Markdown or as one self-contained HTML page)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import IO

from workbench.cli.common import (
    CliError,
    Paint,
    add_home,
    add_no_color,
    color_wanted,
    open_run,
    positive_int,
    print_json,
    resolve_home,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    search = subparsers.add_parser(
        "search",
        help="find runs by a word in their task, messages, tool calls, results or errors",
        description=(
            "Search every recorded run (ignoring case) in the task, what the model said, "
            "tool names, arguments and results, errors and final answers. Prints one line per "
            "match: run, turn, where it matched and the text around it; newest runs first."
        ),
        epilog=(
            "examples:\n  workbench search 'no file'\n  workbench search timeout --run 3fa2 "
            "--json\n\nexit codes: 0 something matched, 1 nothing did, 2 usage error"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    search.add_argument("text", metavar="TEXT", help="the text to look for")
    search.add_argument("--run", metavar="RUN", help="only this run (id or unique prefix)")
    search.add_argument(
        "--limit", type=positive_int, default=50, help="at most N matches (default 50)"
    )
    search.add_argument("--json", action="store_true", help="print the matches as JSON")
    add_no_color(search)
    add_home(search)
    search.set_defaults(func=cmd_search)

    export = subparsers.add_parser(
        "export",
        help="write a run as one JSON document, as Markdown (to paste in an issue) or as one "
        "HTML page (to attach)",
        description=(
            "json: the run's summary and every event, one document. md: the task, each "
            "turn's text, tool calls and results, and how the run ended, as Markdown. "
            "html: one self-contained page (it loads nothing from anywhere) with the decision "
            "chain as a collapsible tree, tool calls, the timeline, annotations and the tool "
            "schemas."
        ),
        epilog="examples:\n  workbench export 3fa2 --format md -o run.md\n"
        "  workbench export 3fa2 --format html -o run.html",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    export.add_argument("run", metavar="RUN", help="run id (or unique prefix) or a .jsonl path")
    export.add_argument(
        "--format", choices=("json", "md", "html"), default="md", help="md (default), json or html"
    )
    export.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write to FILE instead of stdout"
    )
    add_home(export)
    export.set_defaults(func=cmd_export)


def cmd_search(args: argparse.Namespace) -> int:
    from workbench.cli.read_cmds import open_store
    from workbench.engine.views.search import SEARCHED, search

    with open_store(args) as store:
        run_id = store.resolve_run(args.run) if args.run else None
        hits = search(store, args.text, run_id=run_id, limit=args.limit)
    if args.json:
        print_json([hit.to_json() for hit in hits])
        return 0 if hits else 1  # like grep, with or without --json
    if not hits:
        print(f"no run mentions {args.text!r} ({SEARCHED})")
        return 1
    paint = Paint(color_wanted(args))
    for hit in hits:
        turn = f"turn {hit.turn}" if hit.turn is not None else "-"
        # The match stands out on a terminal; piped, the line is plain text to grep.
        snippet = paint.matches(hit.snippet, args.text)
        print(f"{paint(hit.run_id[:12], 'cyan')}  {turn:<8}  {hit.where:<14}  {snippet}")
    if len(hits) == args.limit:
        print(f"… showing the first {args.limit} matches (use --limit)", file=sys.stderr)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """A run of the home is written as it is read from the store, a window of turns at a
    time (a run of 200,000 events in bounded memory, its progress on stderr); a trace path
    is read whole. With -o the file is put in place whole, once written."""
    from traces.store import StoreError, TraceStore
    from traces.user_files import written_whole
    from workbench.cli.progress import StderrProgress
    from workbench.engine.recording.runs.load import Recording
    from workbench.engine.views.export import ExportError, export_run, write_stored

    home = resolve_home(args)
    run = open_run(args.run, home)

    def write(out: IO[str]) -> None:
        if isinstance(run, Recording):
            out.write(export_run(run.events, args.format))
            return
        bar = StderrProgress()  # shown only when it takes over a second
        try:
            write_stored(
                lambda: TraceStore.for_home(home),
                run.run_id,
                args.format,
                out,
                lambda done, total: bar("exporting", done / total if total else 1.0),
            )
        finally:
            bar.close()

    try:
        if args.output is None:
            write(sys.stdout)
            return 0
        try:
            with written_whole(args.output) as out:
                write(out)
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    except (ExportError, StoreError) as exc:  # no events; the store held or damaged meanwhile
        raise CliError(str(exc).splitlines()[0]) from None
    print(f"wrote run {run.run_id} as {args.format} to {args.output}", file=sys.stderr)
    return 0
