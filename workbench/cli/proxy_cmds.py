"""`workbench proxy`: record any model client's runs by changing its base URL."""

from __future__ import annotations

import argparse
from typing import Any

from workbench.cli.common import (
    CliError,
    add_home,
    add_server_flags,
    positive_int,
    resolve_home,
    serve_until_stopped,
    server_limits,
)
from workbench.cli.lake_cmds import add_push, push_config


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "proxy",
        help="record any OpenAI or Anthropic client's runs through a forwarding endpoint",
        description=(
            "An endpoint that forwards every request to --upstream and records the traffic "
            "as runs (docs/capture.md): point your agent's base URL at the printed address "
            "and use it as usual. Chat completions, the Responses API and Anthropic Messages "
            "(`/v1/messages`, to --anthropic-upstream when given) are recorded; streams pass "
            "through chunk by chunk; "
            "your credentials go upstream and never into a trace. A request whose messages "
            "continue an earlier conversation is that run's next turn; the header "
            "`X-Workbench-Run: NAME` names runs. SIGTERM or Ctrl-C stops it once every "
            "exchange is recorded, ending open runs as cancelled; a second Ctrl-C stops at "
            "once (exit 3)."
        ),
    )
    parser.add_argument(
        "--upstream",
        required=True,
        metavar="URL",
        help="the real endpoint, e.g. https://api.openai.com/v1 or http://127.0.0.1:8000/v1",
    )
    parser.add_argument(
        "--anthropic-upstream",
        default=None,
        metavar="URL",
        help="where Anthropic Messages go (e.g. https://api.anthropic.com; default: "
        "--upstream); Anthropic clients use the printed address without /v1",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        metavar="N",
        help="forward on N processes sharing the port (default 1; one process records for "
        "all of them): for a fleet of agents on a machine with cores to spare",
    )
    add_server_flags(parser)
    add_push(parser, "each recorded run")
    add_home(parser)
    parser.set_defaults(func=_cmd_proxy)


def _cmd_proxy(args: argparse.Namespace) -> int:
    from workbench.cli.lake_pusher import pushing_while
    from workbench.engine.http.proxy import ProxyError, RecordingProxy

    home = resolve_home(args)
    lake = push_config(args, home)
    try:
        proxy = RecordingProxy(
            args.upstream,
            home,
            host=args.host,
            port=args.port,
            anthropic_upstream=args.anthropic_upstream,
            workers=args.workers,
            **server_limits(args),
        )
    except ProxyError as exc:
        raise CliError(str(exc)) from None
    try:
        return pushing_while(
            lake,
            home,
            lambda: serve_until_stopped(
                proxy,
                lambda: (
                    f"proxying {proxy.base_url} -> {args.upstream} (recording into {home}; "
                    "Ctrl-C stops)"
                ),
            ),
        )
    except ProxyError as exc:  # a worker that could not start
        raise CliError(str(exc)) from None
