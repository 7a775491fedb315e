"""Commands that share runs with other tools: `export-parquet`, `export-otel`, `collect` and
`ingest-otel`.

The OpenTelemetry packages are an optional extra (`pip install 'agent-workbench[otel]'`);
they, aiohttp and the engine are imported inside the handlers only.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from workbench.cli.common import (
    CliError,
    add_home,
    add_server_flags,
    positive_float,
    positive_int,
    print_json,
    resolve_home,
    serve_until_stopped,
    server_limits,
)
from workbench.cli.lake_cmds import add_push, push_config

OTEL_EXTRA = "pip install 'agent-workbench[otel]'"

EXPORT_PARQUET_HELP = """\
Write the store's runs and events as a Hive-partitioned Parquet dataset under DEST:
DEST/runs/day=YYYY-MM-DD/*.parquet and DEST/events/day=YYYY-MM-DD/*.parquet (day = the UTC
day the run started). DEST is a folder or an object store URL DuckDB can write (s3://…).
Running it again appends only what is new; DuckDB, Spark or Trino read the dataset in place,
and `workbench sql --dataset DEST` queries it next to the local store. See docs/otel.md.
"""


EXPORT_OTEL_HELP = """\
Send runs as OpenTelemetry spans over OTLP/HTTP (protobuf): one trace per run, an
`invoke_agent` span with a `chat` span per model call and an `execute_tool` span per tool
call, carrying the GenAI semantic conventions' attributes and OpenInference's (what Arize
Phoenix reads). Exporting a run again sends the same trace and span ids. Secrets stay
redacted. Needs the otel extra: pip install 'agent-workbench[otel]'. See docs/otel.md.

  workbench export-otel --all --endpoint http://localhost:6006     # a local Phoenix
  workbench export-otel 3f2a --endpoint http://collector:4318
"""

COLLECT_HELP = """\
Turn spans from agents instrumented with OpenTelemetry (GenAI semantic conventions old and
new, OpenInference, OpenLLMetry, pydantic-ai) into runs: one run per trace, marked as
imported, that open in the TUI and work with show, diff, sql and regression cases; a trace
that gives none says why on stderr. `collect` is an OTLP/HTTP receiver (protobuf and JSON,
gzip or not, on http://127.0.0.1:4318/v1/traces by default, /v1/logs and /v1/metrics
beside it; SIGTERM or Ctrl-C stops it); a trace is written when its root span arrives, or
as it is after --pending-timeout without a new span. Log records join their spans, and
Claude Code's telemetry events are a run per session. `ingest-otel` reads OTLP JSON files.
Runs get the home's redaction patterns. Needs the otel extra. See docs/otel.md.
"""


def _date(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 date") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    func: Callable[[argparse.Namespace], int],
    summary: str,
    description: str,
) -> argparse.ArgumentParser:
    """A command of these: its --help shows `description` as written."""
    parser = subparsers.add_parser(
        name,
        help=summary,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=func)
    return parser


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parquet = _command(
        subparsers,
        "export-parquet",
        cmd_export_parquet,
        "append the store's runs and events to a Parquet dataset (by day)",
        EXPORT_PARQUET_HELP,
    )
    parquet.add_argument("dest", metavar="DEST", help="a folder or an object store URL")
    parquet.add_argument("--json", action="store_true", help="print the report as JSON")
    add_home(parquet)

    otel = _command(
        subparsers,
        "export-otel",
        cmd_export_otel,
        "send runs to an OpenTelemetry backend as OTLP/HTTP spans",
        EXPORT_OTEL_HELP,
    )
    otel.add_argument("runs", nargs="*", metavar="RUN", help="run ids or unique prefixes")
    otel.add_argument("--all", action="store_true", help="every run in the store")
    otel.add_argument(
        "--since", type=_date, metavar="DATE", help="runs started on or after DATE (ISO 8601)"
    )
    otel.add_argument(
        "--endpoint",
        metavar="URL",
        help="OTLP/HTTP endpoint, e.g. http://localhost:6006 (a bare host gets /v1/traces); "
        "default $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, $OTEL_EXPORTER_OTLP_ENDPOINT, "
        "else http://localhost:4318",
    )
    otel.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an HTTP header to send (repeatable); default $OTEL_EXPORTER_OTLP_HEADERS",
    )
    otel.add_argument(
        "--timeout", type=positive_float, default=10.0, help="seconds per request (default 10)"
    )
    otel.add_argument("--json", action="store_true", help="print the report as JSON")
    add_home(otel)

    collect = _command(
        subparsers,
        "collect",
        cmd_collect,
        "receive OpenTelemetry spans (OTLP/HTTP) from other agents as runs",
        COLLECT_HELP,
    )
    # 64 MiB: otel_collect's MAX_BODY, written out here because --help must not import it.
    add_server_flags(collect, port=4318, max_request_mb=64)
    add_push(collect, "each collected run")
    # The defaults are otel_collect's MAX_PENDING_TRACES and PENDING_TIMEOUT_S, written out
    # here because --help must not import aiohttp.
    collect.add_argument(
        "--max-pending",
        type=positive_int,
        default=1000,
        metavar="N",
        help="traces that may wait for their root span; past it the longest-waiting is "
        "written as it is (default 1000)",
    )
    collect.add_argument(
        "--pending-timeout",
        type=positive_float,
        default=300.0,
        metavar="SECONDS",
        help="a trace with no new span for this long is written without its root span "
        "(default 300)",
    )
    add_home(collect)

    ingest = _command(
        subparsers,
        "ingest-otel",
        cmd_ingest_otel,
        "import OTLP JSON files of GenAI / OpenInference spans (and logs) as runs",
        COLLECT_HELP,
    )
    ingest.add_argument("files", nargs="+", metavar="FILE", help="OTLP JSON files")
    ingest.add_argument("--json", action="store_true", help="print the runs as JSON")
    add_home(ingest)


def cmd_export_parquet(args: argparse.Namespace) -> int:
    from traces.store import StoreError
    from workbench.cli.read_cmds import open_store

    with open_store(args) as store:
        try:
            report = store.export_dataset(args.dest)
        except StoreError as exc:
            raise CliError(str(exc)) from None
    if args.json:
        print_json(report.__dict__)
    elif report.new_events or report.new_run_rows:
        print(
            f"exported {report.new_events} events and {report.new_run_rows} run row(s) "
            f"over {report.days} day(s) to {report.dest}"
        )
    else:
        print(f"nothing new to export; {report.dest} is up to date")
    return 0


def _otel_module(name: str) -> Any:
    import importlib

    try:
        return importlib.import_module(f"workbench.engine.otel.{name}")
    except ImportError as exc:
        if exc.name and exc.name.split(".")[0] in ("opentelemetry", "google", "aiohttp"):
            raise CliError(f"this command needs the otel extra: {OTEL_EXTRA}") from None
        raise


def _headers(items: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise CliError(f"--header {item!r}: write NAME=VALUE")
        headers[name.strip()] = value.strip()
    return headers


def cmd_export_otel(args: argparse.Namespace) -> int:
    otel_export = _otel_module("export")
    from traces.home import redaction_patterns
    from workbench.cli.common import redactor_for
    from workbench.cli.progress import StderrProgress
    from workbench.cli.read_cmds import open_store

    if not (args.runs or args.all or args.since):
        raise CliError("name the runs to export (RUN …), or use --all or --since DATE")
    home = resolve_home(args)
    redactor = redactor_for(home)  # one line for a pattern that does not compile
    # Traces are redacted when written; patterns configured since apply on the way out.
    redact = redactor.text if redaction_patterns(home) else None
    headers = _headers(args.header)
    try:
        span_exporter = otel_export.exporter(args.endpoint, headers, args.timeout)
    except otel_export.OtelExportError as exc:
        raise CliError(str(exc)) from None
    bar = StderrProgress()  # shown only when the export takes over a second

    def progress(state: Any) -> None:
        what = f"{state.runs_done}/{state.runs_total} runs exported ({state.spans} spans)"
        bar(what, state.runs_done / max(state.runs_total, 1))

    with open_store(args) as store:
        if args.runs:
            rows = [store.run(store.resolve_run(prefix)) for prefix in args.runs]
        else:
            rows = list(reversed(store.runs(limit=store.count_runs())))  # oldest first
        if args.since:
            rows = [r for r in rows if r.started_at is not None and r.started_at >= args.since]
        run_ids = [row.run_id for row in rows]
        sender = otel_export.SpanSender(span_exporter)
        try:
            state = otel_export.export_runs(
                (store.events(run_id, types=otel_export.SPAN_EVENT_TYPES) for run_id in run_ids),
                sender,
                otel_export.resource(),
                redact=redact,
                total=len(run_ids),
                progress=progress,
            )
        except otel_export.OtelExportError as exc:
            raise CliError(str(exc)) from None
        finally:
            bar.close()
            sender.close()
    report = {"runs": state.runs_done, "spans": state.spans, "endpoint": sender.endpoint}
    if args.json:
        print_json(report | {"run_ids": run_ids})
    else:
        print(f"exported {state.runs_done} run(s) as {state.spans} spans to {sender.endpoint}")
    return 0


def _print_run(run: Any) -> None:
    verb = "imported" if run.written else "already imported"
    left_out = run.summary()
    left_out = f"; {left_out}" if left_out else ""
    print(f"{verb} run {run.run_id[:12]} ({run.status}, {run.turns} turn(s){left_out})", flush=True)


def cmd_collect(args: argparse.Namespace) -> int:
    from traces.home import redaction_patterns

    otel_collect = _otel_module("collect")
    from workbench.cli.lake_pusher import pushing_while

    home = resolve_home(args)
    redaction_patterns(home)  # a pattern that does not compile is one line, before serving
    lake = push_config(args, home)

    def say(message: str) -> None:
        print(f"workbench: {message}", file=sys.stderr, flush=True)

    try:
        collector = otel_collect.Collector(
            home,
            args.host,
            args.port,
            on_run=_print_run,
            on_problem=say,
            on_note=say,
            on_skip=lambda skipped: say(skipped.message),
            max_pending_traces=args.max_pending,
            pending_timeout_s=args.pending_timeout,
            **server_limits(args),
        )
    except otel_collect.CollectorError as exc:
        raise CliError(str(exc)) from None
    receiver = collector.receiver
    return pushing_while(
        lake,
        home,
        lambda: serve_until_stopped(
            collector,
            lambda: f"collecting OTLP/HTTP spans on {collector.endpoint} into {home}; Ctrl-C stops",
            receiver.summary,
        ),
    )


# OTLP JSON files hold whole exports of many traces: a larger bound than for settings files.
OTLP_FILE_BYTES = 512 * 1024 * 1024


def cmd_ingest_otel(args: argparse.Namespace) -> int:
    from pathlib import Path

    from traces.user_files import check_file

    otel_import = _otel_module("ingest")
    home = resolve_home(args)
    runs = []
    skipped = []
    problems = 0
    for name in args.files:
        path = Path(name)
        try:
            check_file(path, OTLP_FILE_BYTES)  # not a FIFO or a device; not beyond memory
            spans = otel_import.read_json_file(path)
        except OSError as exc:
            raise CliError(f"cannot read {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise CliError(f"{path}: not a text file; ingest-otel reads OTLP JSON") from None
        except otel_import.OtlpError as exc:
            raise CliError(str(exc)) from None
        for spans_of_trace in otel_import.group_traces(spans).values():
            try:
                run = otel_import.write_run(home, spans_of_trace)
            except otel_import.OtlpError as exc:  # one trace; the others still go in
                print(f"workbench: {path}: {exc}", file=sys.stderr)
                problems += 1
                continue
            if isinstance(run, otel_import.SkippedTrace):
                print(f"workbench: {path}: {run.message}", file=sys.stderr)
                skipped.append(run)
            else:
                runs.append(run)
    if args.json:
        # A trace that gave no run is an item too, with `skipped` saying why.
        print_json(
            [run.__dict__ | {"path": str(run.path)} for run in runs]
            + [{"run_id": None, **trace.__dict__, "skipped": trace.reason} for trace in skipped]
        )
    else:
        for run in runs:
            _print_run(run)
        if not runs and not problems:
            print("no GenAI or OpenInference spans found; nothing imported")
    return 1 if problems else 0


__all__ = ["register"]
