"""`workbench web`: the TUI in a browser (textual-serve), behind a token and Host and Origin
checks, on loopback and read-only unless asked (`workbench.engine.http.web`)."""

from __future__ import annotations

import argparse
import re

from workbench.cli.common import (
    CliError,
    add_home,
    port_number,
    read_home,
    serve_until_stopped,
)

# What a token may hold: it travels in the URL's query and in a cookie unquoted.
TOKEN_CHARACTERS = re.compile(r"[A-Za-z0-9._~-]+")

EPILOG = """\
The URL printed holds a token: open it (each browser gets its own TUI). Forks and exports
are refused unless --allow-writes; they then use the model of OPENAI_BASE_URL,
WORKBENCH_MODEL and OPENAI_API_KEY as `workbench tui` does. Needs the web extra:
pip install 'agent-workbench[web]'. See docs/web.md.

examples:
  workbench web
  workbench web --host 0.0.0.0 --port 8000 --url http://debug-box:8000
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "web",
        help="serve the workbench TUI to a browser (token, loopback, read-only by default)",
        description=(
            "Serve the interactive workbench on the runs of the home folder to web browsers "
            "(textual-serve): a random token in the printed URL, requests for another Host "
            "and WebSockets from another origin refused."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=port_number, default=0, help="port (default 0: pick a free one)"
    )
    parser.add_argument(
        "--token", help="the token the URL must carry (default: a new random one each start)"
    )
    parser.add_argument(
        "--url",
        metavar="URL",
        help="the origin browsers use, as http://HOST:PORT (needed with a --host other "
        "machines reach; default http://HOST:PORT as bound)",
    )
    parser.add_argument(
        "--allow-writes",
        action="store_true",
        help="let the browser's TUI fork runs and export them into the home",
    )
    add_home(parser)
    parser.set_defaults(func=cmd_web)


def cmd_web(args: argparse.Namespace) -> int:
    from traces.store import StoreError, TraceStore
    from workbench.engine.http.web import WebError, WorkbenchWeb

    home = read_home(args, make_default=True)
    if args.token is not None and not TOKEN_CHARACTERS.fullmatch(args.token):
        raise CliError(
            "--token: use letters, digits, '-', '_', '.' and '~' only (it travels in a URL "
            "and a cookie), or leave it out for a random one"
        )
    try:
        with TraceStore.for_reading(home):  # a damaged store is one line here, not per tab
            pass
        server = WorkbenchWeb(
            home,
            host=args.host,
            port=args.port,
            token=args.token,
            allow_writes=args.allow_writes,
            public_url=args.url,
        )
    except (WebError, StoreError) as exc:
        raise CliError(str(exc).splitlines()[0]) from None
    mode = "forks and exports allowed" if args.allow_writes else "read-only"
    return serve_until_stopped(
        server, lambda: f"serving the workbench at {server.url} ({mode}; Ctrl-C stops)"
    )
