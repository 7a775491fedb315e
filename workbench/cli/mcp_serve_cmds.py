"""`workbench mcp-serve`: the home's runs as MCP tools for a coding agent (docs/mcp.md)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from workbench.cli.common import CliError, add_home, port_number, read_home


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "mcp-serve",
        help="serve the recorded runs as MCP tools to a coding agent (stdio or HTTP)",
        description=(
            "An MCP server whose tools list, show, search, diff, compare, replay, fork, "
            "annotate, check and judge the runs of the home (list_runs, list_failures, "
            "explain_failure, show_run, search_runs, diff_runs, compare_runs, replay_run, "
            "fork_run, run_suite, annotate_run, check_rules, judge_runs, lint_tools). Over "
            "stdio by default, as a coding agent starts it; with --port, streamable HTTP at "
            "http://HOST:PORT/mcp. Read-only unless --allow-writes: fork_run, run_suite, "
            "annotate_run and judge_runs then write to the home. See docs/mcp.md."
        ),
        epilog="example:\n  claude mcp add workbench -- workbench mcp-serve",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--port",
        type=port_number,
        default=None,
        help="serve streamable HTTP on this port (0: pick a free one) instead of stdio",
    )
    parser.add_argument(
        "--host", default=None, help="address for --port to bind (default 127.0.0.1)"
    )
    parser.add_argument(
        "--allow-writes",
        action="store_true",
        help="let fork_run record new runs (otherwise only its dry_run is answered)",
    )
    add_home(parser)
    parser.set_defaults(func=cmd_mcp_serve)


def cmd_mcp_serve(args: argparse.Namespace) -> int:
    import asyncio

    from workbench.engine.mcp_server.server import ServeError, serve_http, serve_stdio

    if args.host is not None and args.port is None:
        raise CliError("--host is the address of the HTTP server: give --port too")
    home = read_home(args).resolve()

    def announce(url: str) -> None:
        writes = "writes allowed" if args.allow_writes else "read-only"
        print(f"serving MCP at {url} (home {home}, {writes}; Ctrl-C stops)", file=sys.stderr)
        sys.stderr.flush()

    def left_running(calls: int) -> None:
        # The client is gone and a call at work in a thread cannot be stopped: end now
        # rather than wait for it (the store is written in transactions: a kill loses
        # nothing committed).
        were = "call still running was" if calls == 1 else "calls still running were"
        print(f"stdin closed: {calls} {were} left unfinished", file=sys.stderr)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # the client may be gone
                stream.flush()
        os._exit(0)

    try:
        if args.port is None:
            # Stdin closing ends it quietly; a signal says so, as the other servers do.
            stopped_by = asyncio.run(
                serve_stdio(home, allow_writes=args.allow_writes, on_left_running=left_running)
            )
            if stopped_by != "stdin closed":
                print("stopped", file=sys.stderr)
        else:
            asyncio.run(
                serve_http(
                    home,
                    host=args.host or "127.0.0.1",
                    port=args.port,
                    allow_writes=args.allow_writes,
                    on_ready=announce,
                )
            )
    except ServeError as exc:
        raise CliError(str(exc)) from None
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    return 0
