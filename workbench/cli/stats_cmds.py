"""`workbench stats`: runs, failures, tokens, cost and latency by day and by model, as
charts in the terminal (sparklines across the days, a bar per day and per model).

The figures come from `workbench.engine.views.stats` (one aggregate query, the same the
TUI's overview draws); this module only lays them out.
"""

from __future__ import annotations

import argparse
import shutil
from typing import TYPE_CHECKING

from traces.text import short_count, short_ms
from workbench.cli.common import add_home, load_prices, positive_int, print_json, read_home
from workbench.cli.read_cmds import run_kind

if TYPE_CHECKING:
    from workbench.engine.views.stats import RunStats, StatsRow

DAYS_DEFAULT = 30  # workbench.engine.views.stats.DEFAULT_DAYS (the parser loads no engine)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    stats = subparsers.add_parser(
        "stats",
        help="runs, failures, tokens, cost and latency by day and by model, as charts",
        description=(
            "Counts the recorded runs of the last DAYS days (UTC, up to the newest run's "
            "day) by day and by model: runs and failures (runs that did not complete, as "
            "in `runs --failed`), tokens, cost (when <home>/prices.toml prices the model) "
            "and run latency (median and 95th percentile). Regression samples are left "
            "out unless --kind asks for them."
        ),
        epilog="examples:\n  workbench stats\n  workbench stats --days 7 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    stats.add_argument(
        "--days",
        type=positive_int,
        default=DAYS_DEFAULT,
        help=f"the last N days with runs (default {DAYS_DEFAULT})",
    )
    stats.add_argument(
        "--kind",
        action="append",
        type=run_kind,
        metavar="KIND",
        help="only runs of this kind (repeatable; see `workbench runs --help`)",
    )
    stats.add_argument("--json", action="store_true", help="print the figures as JSON")
    add_home(stats)
    stats.set_defaults(func=cmd_stats)


def cmd_stats(args: argparse.Namespace) -> int:
    from workbench.cli.read_cmds import open_store
    from workbench.engine.views.stats import DEFAULT_KINDS, run_stats

    prices = load_prices(read_home(args))
    with open_store(args) as store:
        stats = run_stats(store, prices, days=args.days, kinds=args.kind or DEFAULT_KINDS)
    if args.json:
        print_json(stats.to_json())
    else:
        width = shutil.get_terminal_size((100, 24)).columns
        print("\n".join(stats_lines(stats, width)))
    return 0


# ---------------------------------------------------------------- charts


count = short_count


def ms(value: float | None) -> str:
    return "-" if value is None else short_ms(value)


def money(stats: RunStats, amount: float | None) -> str:
    if amount is None:
        return "-"
    return f"{stats.currency}{amount:.{4 if amount < 1 else 2}f}"


def stats_lines(stats: RunStats, width: int = 100) -> list[str]:
    """The overview as text: totals, a sparkline per figure across the days, then a table
    with a bar per day and one per model."""
    from workbench.engine.views.stats import FAILED_BAR, OK_BAR, sparkline

    total = stats.total
    kinds = ", ".join(stats.kinds)
    if not total.runs:
        return [f"no runs of {kinds} recorded yet; `workbench demo` records some"]
    # The window from its first day with runs: a new home's 30-day window is mostly before it.
    days = stats.by_day[next(i for i, d in enumerate(stats.by_day) if d.runs) :]
    first_day = days[0].key
    lines = [
        f"runs from {first_day} to {stats.last_day} (UTC; {kinds})",
        f"{total.runs:,} runs · {total.failures:,} failed ({total.failure_rate:.0%}) · "
        f"{count(total.tokens)} tokens · "
        + (f"{money(stats, total.cost)} · " if stats.priced else "")
        + f"latency p50 {ms(total.p50_ms)}, p95 {ms(total.p95_ms)}",
        "",
    ]
    series: list[tuple[str, list[float | None]]] = [
        ("runs", [float(d.runs) for d in days]),
        ("failed", [float(d.failures) for d in days]),
        ("tokens", [float(d.tokens) for d in days]),
    ]
    if stats.priced:
        series.append(("cost", [d.cost for d in days]))
    series.append(("p95 latency", [d.p95_ms for d in days]))
    lines.append(f"per day, {first_day} → {stats.last_day}")
    for name, values in series:
        tops = [v for v in values if v]
        top = max(tops) if tops else 0.0
        peak = {"cost": money(stats, top), "p95 latency": ms(top)}.get(name, count(int(top)))
        lines.append(f"  {name:<12}│{sparkline(values)}│ max {peak}")
    lines.append("")
    lines += _table(stats, "day", days, width)
    lines.append("")
    lines += _table(stats, "model", stats.by_model, width)
    lines.append("")
    lines.append(f"{OK_BAR} completed  {FAILED_BAR} did not complete")
    return lines


def _table(stats: RunStats, title: str, rows: list[StatsRow], width: int) -> list[str]:
    from workbench.engine.views.stats import runs_bar

    key_width = max([len(title), *(len(r.key) for r in rows)])
    key_width = min(key_width, 28)
    figures = "  runs failed  tokens" + ("     cost" if stats.priced else "") + "    p50    p95"
    bar_width = max(8, min(40, width - key_width - len(figures) - 2))
    most = max((r.runs for r in rows), default=0)
    lines = [f"{title:<{key_width}} {'':<{bar_width}}{figures}"]
    quiet = 0  # days without runs since the last row shown: one line says how many
    for row in [*rows, None]:
        if row is not None and not row.runs:
            quiet += 1
            continue
        if quiet:
            lines.append(f"{'':<{key_width}} ({quiet} day{'s' if quiet > 1 else ''} without runs)")
            quiet = 0
        if row is None:
            break
        key = row.key if len(row.key) <= key_width else row.key[: key_width - 1] + "…"
        cost = f" {money(stats, row.cost):>8}" if stats.priced else ""
        lines.append(
            f"{key:<{key_width}} {runs_bar(row, most, bar_width)}"
            f"{row.runs:>6} {row.failures:>6} {count(row.tokens):>7}{cost}"
            f" {ms(row.p50_ms):>6} {ms(row.p95_ms):>6}"
        )
    return lines
