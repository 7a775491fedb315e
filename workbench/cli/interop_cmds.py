"""Commands that share runs with other tools: `export-parquet`, `export-otel`, `collect` and
`ingest-otel`.

The OpenTelemetry packages are an optional extra (`pip install 'agent-workbench[otel]'`);
they, aiohttp and the engine are imported inside the handlers only.
"""

from __future__ import annotations

import argparse

from workbench.cli.common import CliError, add_home, print_json

EXPORT_PARQUET_HELP = """\
Write the store's runs and events as a Hive-partitioned Parquet dataset under DEST:
DEST/runs/day=YYYY-MM-DD/*.parquet and DEST/events/day=YYYY-MM-DD/*.parquet (day = the UTC
day the run started). DEST is a folder or an object store URL DuckDB can write (s3://…).
Running it again appends only what is new; DuckDB, Spark or Trino read the dataset in place,
and `workbench sql --dataset DEST` queries it next to the local store. See docs/otel.md.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parquet = subparsers.add_parser(
        "export-parquet",
        help="append the store's runs and events to a Parquet dataset (by day)",
        description=EXPORT_PARQUET_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parquet.add_argument("dest", metavar="DEST", help="a folder or an object store URL")
    parquet.add_argument("--json", action="store_true", help="print the report as JSON")
    add_home(parquet)
    parquet.set_defaults(func=cmd_export_parquet)


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


__all__ = ["register"]
