"""N runs of one task side by side (`workbench compare` in the TUI): the passing path's
steps down, the path and each variant across (runs that left it the same way at the same
step, collapsed into one column). A variant's column follows the path (│) down to the step
where its runs left it, which shows what they did instead.

Enter on a cell opens a run at that step: a variant's first run at its divergent step, or
the path's run at the step of the row. The comparison is the engine's
(`workbench.engine.analysis.compare`); this screen only lays it out.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Header, Static

from workbench.engine.analysis.compare import GroupComparison, Step, Variant
from workbench.tui.diff_screens import word_diff_text
from workbench.tui.footer import Footer
from workbench.tui.navigation import OpenRun
from workbench.tui.render import one_line, plural, short_id
from workbench.tui.screens import WorkbenchScreen

CELL_WIDTH = 36  # characters of a step in a cell
PATH_COLUMN = 1  # the table's columns: the step, the path, then one per variant


def step_cell(step: Step) -> Text:
    """A step in a cell: the call with its arguments and outcome, the answer, the end."""
    style = "green" if step.outcome in ("ok", "answered", "completed") else "bold red"
    if step.kind == "call":
        return Text.assemble(
            (step.tool or "?", "bold"),
            (" " + one_line(step.arguments, CELL_WIDTH - len(step.tool or "?") - 4), "cyan"),
            (f" {step.outcome.replace('_', ' ')}", style),
        )
    if step.kind == "answer":
        return Text.assemble(("answer ", "bold"), (one_line(step.text, CELL_WIDTH - 7), "green"))
    return Text(step.label(), style=style)


def variant_title(index: int, variant: Variant) -> str:
    return f"#{index + 1} · {plural(variant.runs, 'run')}, {variant.failed} failed"


def summary_text(named: str, comparison: GroupComparison) -> Text:
    head = Text.assemble(
        (f"{plural(comparison.runs, 'run')} ", "bold"),
        (f"({named}) · "),
        (f"{comparison.passed} passed", "green"),
        ", ",
        (f"{comparison.failed} failed", "red" if comparison.failed else ""),
    )
    if comparison.task:
        head.append(f"\ntask: {one_line(comparison.task, 120)}", style="dim")
    if comparison.tasks > 1:
        head.append(f"\n{comparison.tasks} different tasks: compared anyway", style="yellow")
    shown = len(comparison.variants)
    ways = comparison.total_variants
    head.append(
        f"\n{plural(len(comparison.on_path), 'run')} followed the path of "
        + ("the passing runs" if comparison.path_of == "passing" else "most runs (none passed)")
        + f" to its end; {plural(ways, 'way')} of leaving it"
        + (f" ({shown} shown)" if ways > shown else "")
    )
    return head


def variant_detail(comparison: GroupComparison, variant: Variant) -> RenderableType:
    """What a variant's runs did where they left the path, beside the path's step, with the
    word diffs of their texts, and its runs."""
    departure = variant.departure
    parts: list[RenderableType] = [
        Text(variant.sentence(comparison.who), style="bold"),
        Text(f"at step {departure.position + 1}" + _turn(departure.step), style="dim"),
    ]
    if departure.expected is not None:
        parts.append(Text.assemble(("path  ", "dim"), departure.expected.label()))
    parts.append(Text.assemble(("here  ", "dim"), departure.step.label()))
    for diff in departure.diffs:
        parts.append(Text.assemble((f"{diff.what}  ", "dim"), word_diff_text(diff.spans)))
    if not departure.diffs and departure.step.text:
        parts.append(Text(one_line(departure.step.text, 400)))
    runs = " ".join(short_id(run) for run in variant.run_ids[:12])
    more = f" … and {variant.runs - 12} more" if variant.runs > 12 else ""
    parts.append(Text(f"runs  {runs}{more}   (enter opens {short_id(variant.run_ids[0])} here)"))
    return Group(*parts)


def path_detail(comparison: GroupComparison, step: Step) -> RenderableType:
    parts: list[RenderableType] = [
        Text(f"step {step.position + 1}{_turn(step)} of the path", style="bold"),
        Text(step.label()),
    ]
    if step.text:
        parts.append(Text(one_line(step.text, 600)))
    parts.append(Text(f"from run {short_id(step.run_id)} (enter opens it here)", style="dim"))
    return Group(*parts)


def _turn(step: Step) -> str:
    return f", turn {step.turn}" if step.turn is not None else ""


class RunGroupScreen(WorkbenchScreen):
    """The runs of one task: the passing path and the variants that left it."""

    BINDINGS: ClassVar[list[BindingType]] = []

    class Compared(Message):
        def __init__(self, named: str, comparison: GroupComparison) -> None:
            super().__init__()
            self.named = named
            self.comparison = comparison

    def __init__(self, *, task_of: str | None = None, run_ids: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.task_of = task_of
        self.run_ids = run_ids
        self.comparison: GroupComparison | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text("comparing the runs…"), id="group-summary", classes="summary")
        yield DataTable(id="group-table", cursor_type="cell", zebra_stripes=True)
        with VerticalScroll(id="group-detail-scroll"):
            yield Static(id="group-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"runs of the task of {short_id(self.task_of)}" if self.task_of else ""
        self._compare()

    @work(thread=True, exclusive=True, group="compare", exit_on_error=False)
    def _compare(self) -> None:
        named, comparison = self.backend.group_comparison(self.task_of, self.run_ids)
        self.post_message(self.Compared(named, comparison))

    def worker_failed(self, worker: Any) -> None:
        self.query_one("#group-summary", Static).update(Text("could not compare the runs"))

    def on_run_group_screen_compared(self, message: Compared) -> None:
        comparison = self.comparison = message.comparison
        self.query_one("#group-summary", Static).update(summary_text(message.named, comparison))
        table: DataTable[Any] = self.query_one("#group-table", DataTable)
        table.clear(columns=True)
        table.add_column("step", key="step")
        table.add_column(f"path · {plural(len(comparison.on_path), 'run')}", key="path")
        for index, variant in enumerate(comparison.variants):
            table.add_column(variant_title(index, variant), key=f"v{index}")
        for step in comparison.path:
            cells: list[Text] = [Text(f"{step.position + 1}{_turn(step)}"), step_cell(step)]
            for variant in comparison.variants:
                at = variant.departure.position
                if step.position < at:
                    cells.append(Text("│", style="dim"))
                elif step.position == at:
                    cells.append(step_cell(variant.departure.step))
                else:
                    cells.append(Text(""))
            table.add_row(*cells)
        table.focus()
        if comparison.variants:  # start on the biggest variant's divergent step
            first = comparison.variants[0].departure.position
            table.move_cursor(row=first, column=PATH_COLUMN + 1)
        self._show_detail(table.cursor_coordinate.row, table.cursor_coordinate.column)

    @on(DataTable.CellHighlighted, "#group-table")
    def _highlighted(self, event: DataTable.CellHighlighted) -> None:
        self._show_detail(event.coordinate.row, event.coordinate.column)

    @on(DataTable.CellSelected, "#group-table")
    def _selected(self, event: DataTable.CellSelected) -> None:
        target = self.target(event.coordinate.row, event.coordinate.column)
        if target is not None:
            self.post_message(OpenRun(target.run_id, step=(target.turn, target.seq)))

    def target(self, row: int, column: int) -> Step | None:
        """The step a cell opens: a variant's divergent step, or the path's step."""
        comparison = self.comparison
        if comparison is None or not comparison.path:
            return None
        if column > PATH_COLUMN:
            return comparison.variants[column - PATH_COLUMN - 1].departure.step
        return comparison.path[min(row, len(comparison.path) - 1)]

    def _show_detail(self, row: int, column: int) -> None:
        comparison = self.comparison
        detail = self.query_one("#group-detail", Static)
        if comparison is None or not comparison.path:
            return
        if column > PATH_COLUMN:
            variant = comparison.variants[column - PATH_COLUMN - 1]
            detail.update(variant_detail(comparison, variant))
        else:
            detail.update(
                path_detail(comparison, comparison.path[min(row, len(comparison.path) - 1)])
            )
