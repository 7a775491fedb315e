"""The flags that choose which runs `workbench runs` lists, beyond status, kind and text:
model, time range, tokens, cost and duration thresholds, a tool called and an error kind.
They become one `traces.store.RunQuery`, filtered in SQL (the store may hold a million runs).
"""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from workbench.cli.common import CliError
from workbench.number_args import non_negative_float as _amount
from workbench.number_args import non_negative_int as _count

if TYPE_CHECKING:
    from traces.prices import Prices
    from traces.store import RunQuery

# `--score NAME<0.5`: a score's name, a comparison and a number.
_SCORE = re.compile(r"^\s*([^<>=]+?)\s*(<=|>=|<|>|=)\s*([-+]?(?:\d+\.?\d*|\.\d+))\s*$")
_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def when(text: str) -> datetime:
    """A time as --since/--until take it: ISO (`2026-11-30`, `2026-11-30T14:00`, with an
    offset or else UTC) or an age (`90m`, `6h`, `7d`, `2w`: that long before now)."""
    value = text.strip()
    ago = _AGO.match(value.lower())
    if ago:
        return datetime.now(UTC) - timedelta(seconds=float(ago[1]) * _UNIT_S[ago[2]])
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: give an ISO date or time (2026-11-30, "
            "2026-11-30T14:00, UTC unless an offset is given) or an age (90m, 6h, 7d, 2w)"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


SINCE_HELP = (
    "only runs started at or after TIME: ISO (2026-11-30, 2026-11-30T14:00; UTC unless an "
    "offset is given) or an age (90m, 6h, 7d, 2w)"
)


def score_filter(text: str) -> tuple[str, str, float]:
    """`--score NAME<0.5` (or <=, >, >=, =) as a name, an operator and a value."""
    found = _SCORE.match(text)
    if found is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a score filter: give NAME<VALUE (or <=, >, >=, =), e.g. helpful<0.5"
        )
    return found[1], found[2], float(found[3])


def signature_filter(text: str) -> str:
    """`--signature SIG`: a failure group's eight hex digits (or their start)."""
    value = text.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{1,8}", value):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a failure signature: give the hex digits `workbench failures` "
            "shows in brackets, e.g. 3fa2c81b"
        )
    return value


def add_run_filters(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("more filters (all in SQL on the store)")
    group.add_argument(
        "--model", metavar="NAME", help="only runs whose model name contains NAME (any case)"
    )
    group.add_argument(
        "--since",
        type=when,
        metavar="TIME",
        help=SINCE_HELP,
    )
    group.add_argument("--until", type=when, metavar="TIME", help="only runs started before TIME")
    group.add_argument("--min-tokens", type=_count, metavar="N", help="at least N tokens in all")
    group.add_argument("--max-tokens", type=_count, metavar="N", help="at most N tokens in all")
    group.add_argument(
        "--min-cost",
        type=_amount,
        metavar="AMOUNT",
        help="costing at least AMOUNT (needs <home>/prices.toml; unpriced models never match)",
    )
    group.add_argument("--max-cost", type=_amount, metavar="AMOUNT", help="costing at most AMOUNT")
    group.add_argument(
        "--min-latency",
        type=_amount,
        metavar="MS",
        help="lasting at least MS milliseconds (the run's duration, first event to last)",
    )
    group.add_argument("--max-latency", type=_amount, metavar="MS", help="lasting at most MS ms")
    group.add_argument("--tool", metavar="NAME", help="only runs that called the tool NAME")
    group.add_argument(
        "--error-kind",
        metavar="KIND",
        help="only runs that recorded an error of this kind (e.g. timeout, http_429, config)",
    )
    group.add_argument(
        "--label",
        metavar="L",
        help="only runs annotated with label L (on the run, a turn or a call; `workbench note`)",
    )
    group.add_argument(
        "--unreviewed", action="store_true", default=None, help="only runs with no annotation"
    )
    group.add_argument(
        "--session",
        metavar="ID",
        help="only runs of this session (`workbench sessions`; a unique prefix will do)",
    )
    group.add_argument(
        "--score",
        type=score_filter,
        metavar="NAME<VALUE",
        help="only runs with a score NAME below VALUE (or <=, >, >=, =), e.g. 'helpful<0.5'",
    )
    group.add_argument(
        "--signature",
        type=signature_filter,
        metavar="SIG",
        help="only the failed runs of one failure group (its digits in `workbench failures`)",
    )


def filters_given(args: argparse.Namespace) -> bool:
    names = ("model", "since", "until", "min_tokens", "max_tokens", "min_cost", "max_cost")
    more = ("min_latency", "max_latency", "tool", "error_kind", "label", "unreviewed", "score")
    return any(getattr(args, name) is not None for name in (*names, *more, "session", "signature"))


def run_query(args: argparse.Namespace, prices: Prices) -> RunQuery:
    """The listing's whole filter from the command's flags."""
    from traces.store import RunQuery

    wants_cost = args.min_cost is not None or args.max_cost is not None
    if wants_cost and not prices:
        raise CliError(
            "--min-cost/--max-cost need prices: write <home>/prices.toml "
            '([models."NAME"] input = N, output = N per million tokens; see docs/explore.md)'
        )
    if args.since is not None and args.until is not None and args.since >= args.until:
        raise CliError("--since must be before --until")
    more: dict[str, Any] = {
        "model": args.model,
        "since": args.since,
        "until": args.until,
        "min_tokens": args.min_tokens,
        "max_tokens": args.max_tokens,
        "min_duration_ms": args.min_latency,
        "max_duration_ms": args.max_latency,
        "tool": args.tool,
        "error_kind": args.error_kind,
        "min_cost": args.min_cost,
        "max_cost": args.max_cost,
        "label": args.label,
        "unreviewed": args.unreviewed,
        "score": args.score,
        "session": args.session,
        "signature": args.signature,
        "prices": prices.rates() if wants_cost else {},
    }
    return RunQuery.of(
        args.status, args.text, args.failed, args.kind, None, samples=args.samples, **more
    )
