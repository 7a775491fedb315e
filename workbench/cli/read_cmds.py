"""Read commands: `ingest`, `runs`, `show`, `sql`, `schema`.

Each one first ingests whatever is new under `<home>/traces/`, so what it shows is current.
Problems found in traces go to stderr, one line each; `--json` output is the only thing on
stdout. The store is opened read-write just long enough to ingest (DuckDB lets one process
write at a time); `sql` then runs the user's query on a read-only connection.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traces.home import db_path
from traces.origins import JUDGED_LIKE, RUN_KINDS, judged_status, kind_from_name, kind_label
from traces.statuses import RUN_STATUSES
from workbench.cli.common import (
    CliError,
    ExitCode,
    Paint,
    add_home,
    add_no_color,
    color_wanted,
    load_prices,
    positive_int,
    print_json,
    read_home,
    resolve_home,
)
from workbench.cli.progress import StderrProgress
from workbench.cli.run_filters import add_run_filters, filters_given, run_query
from workbench.engine.recording.runs.window import TURN_WINDOW

if TYPE_CHECKING:  # the store loads DuckDB and the event models pydantic: handlers import them
    from traces.store import IngestReport, TraceStore
    from traces.tree import RunChain, ToolCallNode, TurnNode


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ingest = subparsers.add_parser("ingest", help="load trace files or folders into the store")
    ingest.add_argument("paths", nargs="+", metavar="PATH", help=".jsonl files or folders")
    ingest.add_argument("--json", action="store_true", help="print the report as JSON")
    add_home(ingest)
    ingest.set_defaults(func=cmd_ingest)

    runs = subparsers.add_parser("runs", help="list recorded runs, newest first")
    add_listing_flags(runs)
    runs.add_argument("--limit", type=positive_int, default=50, help="at most N runs (default 50)")
    runs.add_argument("--json", action="store_true", help="print the runs as JSON")
    add_run_filters(runs)
    add_no_color(runs)
    add_home(runs)
    runs.set_defaults(func=cmd_runs)

    show = subparsers.add_parser("show", help="show a run's decision chain, turn by turn")
    what = show.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "run", metavar="RUN", nargs="?", help="run id or a unique prefix of it, or a bundle file"
    )
    what.add_argument(
        "--session",
        metavar="ID",
        help="a session's runs in order with its totals instead (`workbench sessions`)",
    )
    show.add_argument("--json", action="store_true", help="print the chain as JSON")
    show.add_argument(
        "--timeline",
        action="store_true",
        help="the turns as a waterfall of model and tool calls with durations and tokens",
    )
    show.add_argument(
        "--full",
        action="store_true",
        help="the whole system prompt and every message as sent, nothing cut",
    )
    show.add_argument(
        "--turns",
        metavar="A-B",
        type=turn_window,
        help=f"only turns A to B (a run of more than {SHOW_TURNS} turns shows its first "
        f"{SHOW_TURNS} unless told)",
    )
    add_no_color(show)
    add_home(show)
    show.set_defaults(func=cmd_show)

    query = subparsers.add_parser("sql", help="run SQL on the store (see docs/trace-format.md)")
    query.add_argument("query", metavar="QUERY", help='e.g. "SELECT status, count(*) ..."')
    query.add_argument("--json", action="store_true", help="print rows as JSON objects")
    query.add_argument(
        "--dataset",
        metavar="DEST",
        help="also query the Parquet dataset at DEST (a folder or object store URL written "
        "by `workbench export-parquet`) as dataset.runs, dataset.run_rows, dataset.events",
    )
    add_home(query)
    query.set_defaults(func=cmd_sql)

    schema = subparsers.add_parser("schema", help="print the JSON Schema of a trace line")
    schema.set_defaults(func=cmd_schema)


def _report_problems(report: IngestReport) -> None:
    for problem in report.problems:
        print(f"workbench: {problem}", file=sys.stderr)


@contextmanager
def _store(
    args: argparse.Namespace, paths: list[str] | None = None, must_write: bool = False
) -> Iterator[TraceStore]:
    """The home's store, with new traces (and `paths`) ingested; errors become one line.
    On a read-only home the store is read as it is, with a note, unless `must_write`."""
    from traces.store import AmbiguousRunError, IngestReport, StoreError, UnknownRunError

    home = resolve_home(args) if paths else read_home(args)  # only `ingest PATH` makes one
    progress = StderrProgress()  # shown only when ingest takes over a second
    try:
        with _open_home_store(home, must_write) as store:
            report = IngestReport()
            try:
                if not store.read_only:
                    report = store.ingest_home(home, progress)
                if paths and not store.read_only:
                    extra = store.ingest(paths, progress)
                    report.problems += extra.problems
                    report.files += extra.files
                    report.new_events += extra.new_events
                    report.new_runs += extra.new_runs
            finally:
                progress.close()
            args.ingest_report = report
            _report_problems(report)
            yield store
    except StoreError as exc:
        raise CliError(str(exc)) from None
    except (UnknownRunError, AmbiguousRunError) as exc:
        raise CliError(str(exc.args[0])) from None


def _open_home_store(home: Path, must_write: bool) -> TraceStore:
    from traces.store import TraceStore

    if must_write:
        return TraceStore.for_home(home)
    store = TraceStore.for_reading(home)
    if store.read_only_reason:
        print(
            f"workbench: note: {store.read_only_reason}; showing the store as it is, without "
            "ingesting new traces",
            file=sys.stderr,
        )
    return store


def cmd_ingest(args: argparse.Namespace) -> int:
    with _store(args, args.paths, must_write=True) as store:
        report: IngestReport = args.ingest_report
        total = store.count_runs()
    if args.json:
        print_json(report.__dict__ | {"runs_in_store": total})
    elif report.files:
        print(
            f"ingested {report.new_events} events from {report.files} file(s): "
            f"{report.new_runs} new run(s), {total} in the store"
        )
    else:
        print(f"nothing new to ingest; {total} run(s) in the store")
    if any(not Path(path).exists() for path in args.paths):
        return ExitCode.USAGE  # a mistyped path, said above: the others were ingested
    # Non-zero only when nothing could be done at all.
    return ExitCode.FAILED if report.problems and not report.files else ExitCode.OK


def add_listing_flags(parser: argparse.ArgumentParser) -> None:
    """`runs`' own filters (status, failed, samples, task text, kind); `add_run_filters`
    adds the rest. `workbench review` takes them all."""
    parser.add_argument("--status", choices=RUN_STATUSES, help="only runs with this status")
    parser.add_argument(
        "--failed",
        action="store_true",
        help="only runs that did not complete; regression samples only with --samples or "
        "when --kind names them, and never a sample that passed its case",
    )
    parser.add_argument(
        "--samples",
        action="store_true",
        help="list regression samples too (folded under their suite runs by default; "
        "--kind sample lists only them)",
    )
    parser.add_argument("--text", help="only runs whose task contains TEXT")
    parser.add_argument(
        "--kind",
        action="append",
        type=run_kind,
        metavar="KIND",
        help=(
            "only runs of this kind (repeatable): agent (workbench run), fork, "
            "regression_sample (workbench test), mcp_session (workbench mcp), captured "
            "(the proxy), imported (OpenTelemetry); the labels the lists show (run, "
            "sample, mcp) name the same kinds"
        ),
    )


def run_kind(name: str) -> str:
    """`--kind`'s value as an origin: the origin itself, or the label the runs lists show."""
    origin = kind_from_name(name)
    if origin is None:
        raise argparse.ArgumentTypeError(
            f"unknown kind {name!r}; one of {', '.join(RUN_KINDS)} (or run, sample, mcp)"
        )
    return origin


def _when(row_value: Any) -> str:
    return row_value.strftime("%Y-%m-%d %H:%M:%S") if row_value is not None else "-"


def cmd_runs(args: argparse.Namespace) -> int:
    prices = load_prices(resolve_home(args))
    where = run_query(args, prices)
    with _store(args) as store:
        if where.session is not None:  # a whole session id, or the start of one
            where = dataclasses.replace(where, session=store.resolve_session(where.session))
        rows = store.runs(limit=args.limit, where=where)
        total = store.count_runs(where=where)
        folding = where.folded_samples()
        folded = store.count_runs(where=folding) if folding is not None else 0
        split = store.run_tokens([row.run_id for row in rows]) if prices or args.json else {}
    costs = {
        run_id: prices.cost(model, *split[run_id])
        for run_id, model in ((row.run_id, row.model or "") for row in rows)
        if run_id in split
    }
    if args.json:
        listed = []
        for row in rows:
            tokens_in, tokens_out = split.get(row.run_id, (None, None))
            listed.append(
                row.to_json()
                | {"input_tokens": tokens_in, "output_tokens": tokens_out}
                | {"cost": costs.get(row.run_id)}
            )
        print_json(listed)
        return 0
    if not rows and folded:
        print(_folded_note(folded))
        return 0
    if not rows and (args.status or args.text or args.failed or args.kind or filters_given(args)):
        print("no runs match these filters")
        return 0
    if not rows:
        from workbench.engine.views.first_steps import no_runs_yet

        print(no_runs_yet(str(resolve_home(args))))
        return 0
    paint = Paint(color_wanted(args))
    cost_head = f"  {'COST':>9}" if prices else ""
    print(
        paint(
            f"{'RUN':<12}  {'STATUS':<20}  {'KIND':<8}  {'PARENT':<8}  {'TURNS':>5}  "
            f"{'TOOLS':>7}  {'TOKENS':>7}{cost_head}  {'STARTED (UTC)':<19}  TASK",
            "bold",
        )
    )
    for row in rows:
        tools = f"{row.tool_calls}" + (f"/{row.tool_errors}!" if row.tool_errors else "")
        tools = paint(f"{tools:>7}", "red" if row.tool_errors else None)
        task = (row.task or "").replace("\n", " ")
        cost = f"  {prices.format(costs.get(row.run_id)) or '-':>9}" if prices else ""
        kind = kind_label(row.origin)
        # A fork's parent (the run it was forked from), as an id prefix `show` takes.
        parent = f"{(row.parent_run_id or '-')[:8]:<8}"
        run_id = paint(f"{row.run_id[:12]:<12}", "cyan")
        shown = judged_status(row.judged) if row.judged else row.status
        status = paint.status(f"{shown:<20}", JUDGED_LIKE.get(row.judged or "", row.status))
        print(
            f"{run_id}  {status}  {kind:<8}  {parent}  {row.turns:>5}  {tools}  "
            f"{row.total_tokens:>7}{cost}  {_when(row.started_at):<19}  {task[:60]}"
        )
    if total > len(rows):
        print(f"… {total - len(rows)} more (use --limit)")
    if folded:
        print(_folded_note(folded))
    return 0


def _folded_note(folded: int) -> str:
    return (
        f"{folded} regression sample(s) folded under their suite runs: --samples lists them "
        "(the TUI's R shows the suite runs)"
    )


def _tool_json(call: ToolCallNode) -> dict[str, Any]:
    from workbench.engine.recording.fork.tool_policy import call_outcome
    from workbench.engine.views.tool_calls import tool_call_json

    end = call.end
    arguments = {"arguments_raw": call.start.arguments_raw, "arguments": call.arguments}
    return {
        **tool_call_json(call, arguments),
        "reasoning": call.start.reasoning,
        "replayed": end.replayed if end else False,
        "observed": end.observed if end else False,
        # What became of it under a re-run's tool policy (`run_start.meta.tool_policy`).
        "outcome": call_outcome(end),
        "mcp_frames": [m.model_dump(mode="json") for m in call.mcp],
    }


def _turn_json(turn: TurnNode) -> dict[str, Any]:
    from workbench.engine.views.tool_calls import tool_name

    request = turn.request
    response = turn.response
    return {
        "turn": turn.turn,
        "status": turn.status,
        "request": None
        if request is None
        else {
            "messages": len(request.messages),
            "last_message": request.messages[-1] if request.messages else None,
            "tools": [tool_name(t) for t in request.tools],
            "params": request.params,
            "estimated_tokens": request.estimated_tokens,
        },
        "attempts": [
            {
                "attempt": m.attempt,
                "status": m.status,
                "chunks": len(m.chunks),
                "error": m.error.message if m.error else None,
            }
            for m in turn.model_calls
        ],
        "response": None
        if response is None
        else {
            "message": response.message,
            "finish_reason": response.finish_reason,
            "usage": response.usage,
            "ttft_ms": response.ttft_ms,
            "latency_ms": response.latency_ms,
        },
        "tool_calls": [_tool_json(call) for call in turn.tool_calls],
        "calls_not_run": turn.calls_not_run,
        "trims": [t.model_dump(mode="json") for t in turn.trims],
        "errors": [e.model_dump(mode="json") for e in turn.errors],
    }


def chain_json(chain: RunChain) -> dict[str, Any]:
    end = chain.end
    return {
        "run_id": chain.run_id,
        "status": chain.status,
        "start": chain.start.model_dump(mode="json") if chain.start else None,
        "turns": [_turn_json(turn) for turn in chain.turns],
        "errors": [e.model_dump(mode="json") for e in chain.errors],
        "end": end.model_dump(mode="json") if end else None,
    }


# A run of more turns than this shows a page of them (`show --turns` picks another): the
# store reads only that page's events, however long the run. The TUI's windows hold as many.
SHOW_TURNS = TURN_WINDOW


def turn_window(text: str) -> tuple[int, int]:
    """`--turns A-B` (or `A` for one turn): the first and last turn shown."""
    first, _, last = text.partition("-")
    try:
        window = (int(first), int(last or first))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a turn range like 1-100") from None
    if window[0] < 1 or window[1] < window[0]:
        raise argparse.ArgumentTypeError(f"{text!r} is not a turn range like 1-100")
    return window


def cmd_show(args: argparse.Namespace) -> int:
    from workbench.cli.bundle_cmds import on_bundles

    if args.session is not None:
        from workbench.cli.session_render import show_session

        with _store(args) as store:
            return show_session(args, store)
    opened = on_bundles(args, cmd_show, "run")  # a bundle file: each of its runs
    if opened is not None:
        return opened
    from traces.tree import build_chain
    from workbench.cli.show_render import chain_lines, turn_figures
    from workbench.engine.views.timeline import build_timeline, render_timeline

    prices = load_prices(resolve_home(args))
    window: tuple[int, int] | None = args.turns
    with _store(args) as store:
        run_id = store.resolve_run(args.run)
        row = store.run(run_id)
        if window is None and row.turns > SHOW_TURNS:
            first = store.events(run_id, 0, 1, ["model_request"])
            start = first[0].turn if first and first[0].turn else 1
            window = (start, start + SHOW_TURNS - 1)
        events = store.events(run_id, turns=window)
        notes = store.annotations(run_id)
    chain = build_chain(events)
    timeline = build_timeline(events)
    model = row.model or ""
    if args.json:
        document: dict[str, Any] = {"run": row.to_json(), "chain": chain_json(chain)}
        document["annotations"] = notes
        document["tokens"] = turn_figures(timeline, model, prices)
        if window is not None:
            document["turns_shown"] = list(window)
        if args.timeline:
            document["timeline"] = timeline_json(timeline)
        print_json(document)
        return 0
    if args.timeline:

        def cost(input_tokens: int, output_tokens: int) -> str:
            amount = prices.cost(model, input_tokens, output_tokens)
            return f", {prices.format(amount)}" if amount is not None else ""

        width = shutil.get_terminal_size((100, 30)).columns
        lines = render_timeline(timeline, width=width, cost=cost)
    else:
        paint = Paint(color_wanted(args))
        lines = chain_lines(chain, timeline, prices, full=args.full, paint=paint, notes=notes)
    if window is not None:
        shown = [turn.turn for turn in chain.turns]
        if shown and shown[-1] < row.turns:
            after = shown[-1] + 1
            lines.append(
                f"(turns {shown[0]:,}-{shown[-1]:,} of {row.turns:,} shown; the next ones: "
                f"`workbench show {run_id[:12]} --turns {after}-{after + SHOW_TURNS - 1}`)"
            )
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def timeline_json(timeline: Any) -> dict[str, Any]:
    return {
        "run_id": timeline.run_id,
        "end_ms": timeline.end_ms,
        "turns": [dataclasses.asdict(turn) for turn in timeline.turns],
    }


def cmd_sql(args: argparse.Namespace) -> int:
    from traces.store import QueryError, StoreError, TraceStore

    with _store(args):
        pass  # ingest first; the query itself runs on a read-only connection
    home = resolve_home(args)
    try:
        if args.dataset:
            opened = TraceStore.beside_dataset(db_path(home), args.dataset)
        else:
            opened = TraceStore.for_home(home, read_only=True)
        with opened as store:
            try:
                columns, rows = store.query(args.query)
            except QueryError as exc:
                raise CliError(f"{exc}{_tables_hint(store, str(exc))}") from None
    except StoreError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print_json([dict(zip(columns, row, strict=True)) for row in rows])
        return 0
    if not columns:
        return 0
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [min(40, max([len(c)] + [len(r[i]) for r in cells])) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    for row in cells:
        print("  ".join(v[:w].ljust(w) for v, w in zip(row, widths, strict=True)))
    print(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return 0


# DuckDB's words for a table or view that is not there.
_NO_SUCH_TABLE = ("Catalog Error: Table with name", "Catalog Error: Table or view")


def _tables_hint(store: TraceStore, message: str) -> str:
    """After an unknown table: the tables and views there are (a dataset's with its schema)."""
    if not message.startswith(_NO_SUCH_TABLE):
        return ""
    _, rows = store.query(
        "SELECT DISTINCT table_schema, table_name FROM information_schema.tables "
        "WHERE table_schema NOT IN ('information_schema', 'pg_catalog') ORDER BY ALL"
    )
    names = [name if schema == "main" else f"{schema}.{name}" for schema, name in rows]
    return f"; the tables and views are: {', '.join(names)}" if names else ""


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value).replace("\n", "\\n")


def cmd_schema(args: argparse.Namespace) -> int:
    from traces.events import json_schema

    print_json(json_schema())
    return 0


# Other command modules open the home's store the same way.
open_store = _store

__all__ = ["chain_json", "open_store", "register"]
