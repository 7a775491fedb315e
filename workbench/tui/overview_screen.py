"""Overview: runs, failures, tokens, cost and latency by day (sparklines, Textual's own
`Sparkline`) and by model (a bar per model), from the engine's one aggregate query
(`workbench.engine.views.stats`, the same `workbench stats` prints); then the biggest
failure groups (`workbench failures`), Enter on one listing its runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Header, OptionList, Sparkline, Static
from textual.widgets.option_list import Option

from workbench.engine.views.stats import FAILED_BAR, OK_BAR, RunStats, StatsRow, runs_bar
from workbench.tui.navigation import OpenFailureGroup
from workbench.tui.render import fmt_count, fmt_ms
from workbench.tui.screens import PaletteCommand, WorkbenchScreen

if TYPE_CHECKING:
    from traces.store.failures import FailureGroupRow

# The windows `d` steps through, in days; None: every day with runs.
WINDOWS: tuple[int | None, ...] = (30, 7, 90, None)
# The day charts: id, title, and the figure of a day they draw.
CHARTS: tuple[tuple[str, str], ...] = (
    ("runs", "runs"),
    ("failures", "failed"),
    ("tokens", "tokens"),
    ("cost", "cost"),
    ("p95_ms", "p95 latency"),
)
MODEL_BAR_WIDTH = 24
MODEL_BAR_MIN = 8  # below this the model's name gives up room to the bar
MODEL_NAME_MAX = 40
MODEL_NAME_MIN = 12
FAILURE_GROUPS = 5  # the biggest groups shown


def failure_group_line(row: FailureGroupRow) -> Text:
    """A failure group in one line: runs, how they failed, the signature to filter by."""
    how = f"{row.status} · {row.step}" + (f" in {row.tool}" if row.tool else "")
    text = Text.assemble((f"{row.runs:>6,} × ", "bold"), (how, "red"))
    if row.error:
        text.append(f"  {row.error}", style="dim")
    text.append(f"  [{row.signature}]")
    return text


def money(stats: RunStats, amount: float | None) -> str:
    if amount is None:
        return "—"
    return f"{stats.currency}{amount:.{4 if amount < 1 else 2}f}"


def day_values(stats: RunStats, figure: str) -> list[float]:
    """One chart's values, a day each, oldest first (a day without any: 0)."""
    return [float(getattr(day, figure) or 0) for day in stats.by_day]


def peak_text(stats: RunStats, figure: str) -> str:
    top = max(day_values(stats, figure), default=0.0)
    if figure == "cost":
        return f"max {money(stats, top)}"
    if figure == "p95_ms":
        return f"max {fmt_ms(top)}"
    return f"max {fmt_count(int(top))}"


def totals_text(stats: RunStats) -> Text:
    total = stats.total
    if not total.runs:
        return Text(
            "No runs recorded yet: `workbench demo` records some, `workbench run` your own.",
            style="dim",
        )
    text = Text.assemble(
        (f"{total.runs:,} runs", "bold"),
        "  ·  ",
        (
            f"{total.failures:,} failed ({total.failure_rate:.0%})",
            "bold red" if total.failures else "green",
        ),
        f"  ·  {fmt_count(total.tokens)} tokens",
    )
    if stats.priced:
        text.append(f"  ·  {money(stats, total.cost)}")
    text.append(f"  ·  latency p50 {fmt_ms(total.p50_ms)}, p95 {fmt_ms(total.p95_ms)}")
    text.append(
        f"\n{stats.first_day} → {stats.last_day} (UTC)  ·  {', '.join(stats.kinds)}",
        style="dim",
    )
    return text


def models_table(stats: RunStats, width: int = 120) -> Table:
    """A row per model, most runs first, with its runs as a bar (failed part apart), laid
    out for `width`: the figures and their titles whole, the bar and then the model's name
    give way (the name ends in "…")."""
    titles = ["runs", "failed", "tokens", *(("cost",) if stats.priced else ()), "p50", "p95"]
    rows = [_model_cells(stats, row) for row in stats.by_model]
    figures = [max([len(t), *(r[i + 1].cell_len for r in rows)]) for i, t in enumerate(titles)]
    # Each column is padded a blank either side; what is left goes to the name and the bar.
    room = width - sum(figures) - 2 * (len(titles) + 2)
    name = min(max((len(row.key) for row in stats.by_model), default=5), MODEL_NAME_MAX)
    bar = min(MODEL_BAR_WIDTH, max(room - name, 0))
    if bar < MODEL_BAR_MIN:
        name = max(MODEL_NAME_MIN, room - MODEL_BAR_MIN)
        bar = max(0, min(MODEL_BAR_MIN, room - name))
    table = Table(box=None, padding=(0, 1), header_style="bold", expand=False)
    table.add_column("model", no_wrap=True, overflow="ellipsis", max_width=name)
    if bar:
        table.add_column("", no_wrap=True)  # the runs as a bar
    for title, size in zip(titles, figures, strict=True):
        table.add_column(title, justify="right", no_wrap=True, min_width=size)
    most = max((row.runs for row in stats.by_model), default=0)
    for row, cells in zip(stats.by_model, rows, strict=True):
        drawn = [_bar(row, most, bar)] if bar else []
        table.add_row(cells[0], *drawn, *cells[1:])
    return table


class ModelsTable:
    """`models_table` for the width it is drawn in (the overview's pane, any terminal)."""

    def __init__(self, stats: RunStats) -> None:
        self.stats = stats

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield models_table(self.stats, options.max_width)


def _bar(row: StatsRow, most: int, width: int) -> Text:
    bar = runs_bar(row, most, width)
    drawn = Text()
    drawn.append(bar.replace(FAILED_BAR, "").rstrip(), style="green")
    drawn.append(FAILED_BAR * bar.count(FAILED_BAR), style="red")
    return drawn


def _model_cells(stats: RunStats, row: StatsRow) -> list[Text]:
    """The model's name, then its figures."""
    cells = [
        Text(row.key),
        Text(str(row.runs)),
        Text(str(row.failures), style="red" if row.failures else ""),
        Text(fmt_count(row.tokens)),
    ]
    if stats.priced:
        cells.append(Text(money(stats, row.cost)))
    return [*cells, Text(fmt_ms(row.p50_ms)), Text(fmt_ms(row.p95_ms))]


class OverviewScreen(WorkbenchScreen):
    """Overview: runs, failures, tokens, cost and latency by day and by model, as charts."""

    DEFAULT_CSS = """
    OverviewScreen #overview-body { padding: 0 1; }
    OverviewScreen .chart-row { height: 2; }
    OverviewScreen .chart-title { width: 13; color: $text-muted; }
    OverviewScreen .chart-row Sparkline { width: 1fr; height: 2; }
    OverviewScreen .chart-peak { width: 14; padding-left: 1; color: $text-muted; }
    OverviewScreen #overview-axis { height: 1; color: $text-muted; }
    OverviewScreen #overview-models { margin-top: 1; }
    OverviewScreen #overview-failures-title { margin-top: 1; color: $text-muted; }
    OverviewScreen #overview-failures { height: auto; max-height: 8; border: none; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "next_window", "Days"),
        Binding("f", "failures", "Failure groups"),
        Binding("g", "reload", "Reload"),
    ]

    class Grouped(Message):
        def __init__(self, groups: list[FailureGroupRow]) -> None:
            super().__init__()
            self.groups = groups

    class Counted(Message):
        def __init__(self, stats: RunStats, problem: str | None) -> None:
            super().__init__()
            self.stats = stats
            self.problem = problem

    def __init__(self) -> None:
        super().__init__()
        self.window = 0  # index into WINDOWS
        self.stats: RunStats | None = None

    @property
    def days(self) -> int | None:
        return WINDOWS[self.window]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text("overview · counting runs…", style="dim"), id="overview-totals")
        with VerticalScroll(id="overview-body"):
            for figure, title in CHARTS:
                with Horizontal(classes="chart-row", id=f"row-{figure}"):
                    yield Static(Text(title), classes="chart-title")
                    yield Sparkline([], id=f"chart-{figure}")
                    yield Static("", classes="chart-peak", id=f"peak-{figure}")
            yield Static("", id="overview-axis")
            yield Static("", id="overview-models")
            yield Static("failure groups · counting…", id="overview-failures-title")
            yield OptionList(id="overview-failures")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "overview"
        self.query_one("#overview-body").focus()
        self._count()
        self._group()

    @work(thread=True, exclusive=True, group="stats", exit_on_error=False)
    def _count(self) -> None:
        self.post_message(self.Counted(*self.backend.stats(self.days)))

    @work(thread=True, exclusive=True, group="failures", exit_on_error=False)
    def _group(self) -> None:
        self.post_message(self.Grouped(self.backend.failure_groups(self.days, FAILURE_GROUPS)))

    def on_overview_screen_grouped(self, message: Grouped) -> None:
        title = self.query_one("#overview-failures-title", Static)
        if not message.groups:
            title.update("failure groups · no failing runs in these days")
        else:
            title.update("failure groups, biggest first (f, then Enter lists a group's runs)")
        groups = self.query_one("#overview-failures", OptionList)
        groups.clear_options()
        groups.add_options(Option(failure_group_line(g), id=g.signature) for g in message.groups)
        groups.display = bool(message.groups)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None:
            self.post_message(OpenFailureGroup(event.option.id))

    def action_failures(self) -> None:
        groups = self.query_one("#overview-failures", OptionList)
        if groups.option_count:
            groups.focus()
            if groups.highlighted is None:
                groups.highlighted = 0

    def on_overview_screen_counted(self, message: Counted) -> None:
        stats = self.stats = message.stats
        window = f"last {self.days} days" if self.days else "every day"
        self.sub_title = f"overview · {window}"
        self.query_one("#overview-totals", Static).update(totals_text(stats))
        for figure, _ in CHARTS:
            shown = figure != "cost" or stats.priced
            self.query_one(f"#row-{figure}").display = shown and bool(stats.total.runs)
            self.query_one(f"#chart-{figure}", Sparkline).data = day_values(stats, figure)
            self.query_one(f"#peak-{figure}", Static).update(peak_text(stats, figure))
        axis = self.query_one("#overview-axis", Static)
        axis.update(self._axis(stats))
        models = self.query_one("#overview-models", Static)
        models.update(ModelsTable(stats) if stats.by_model else "")
        if message.problem:
            self.notify(f"{message.problem}; costs are left out", severity="warning", timeout=8)

    def _axis(self, stats: RunStats) -> Text:
        if not stats.total.runs:
            return Text("")
        legend = f"   {OK_BAR} completed  {FAILED_BAR} did not complete"
        return Text.assemble(
            " " * 13, (f"{stats.first_day} → {stats.last_day}", "dim"), (legend, "dim")
        )

    def worker_failed(self, worker: Any) -> None:
        if worker.group == "failures":
            self.query_one("#overview-failures-title", Static).update(
                Text("could not group the failing runs", style="red")
            )
            return
        self.query_one("#overview-totals", Static).update(
            Text("could not count the runs", style="red")
        )

    def action_next_window(self) -> None:
        self.window = (self.window + 1) % len(WINDOWS)
        self._count()
        self._group()

    def action_reload(self) -> None:
        self._count()
        self._group()

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield ("Change the days shown", "Last 30, 7, 90 days or every day", self.action_next_window)
        yield ("Reload the overview", "Count the runs again", self.action_reload)
        yield ("Failure groups", "Pick a failure group to list its runs", self.action_failures)
