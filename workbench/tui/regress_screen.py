"""Regression results: stored suite runs, each case's pass rate against the baseline, and for
a case that failed or regressed, how the tool descriptions changed since the baseline.

Everything comes from the store's regression tables (`traces.store.regress`), written by
`workbench test`; the description diff is `traces.schema_diff`'s word diff.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Static

from workbench.engine.regress.stored import SuiteRun
from workbench.tui.diff_screens import word_diff_text
from workbench.tui.schema_view import SchemaPair
from workbench.tui.screens import PaletteCommand, WorkbenchScreen

STATUS_STYLES = {"pass": "green", "fail": "bold red", "regressed": "bold red", "error": "red"}


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def case_status(case: dict[str, Any]) -> Text:
    status = str(case.get("status") or "?")
    return Text(status, style=STATUS_STYLES.get(status, "yellow"))


def render_description_diff(pair: SchemaPair, involved: set[str]) -> RenderableType:
    """The tools that changed since the baseline, descriptions as word diffs; the tools the
    case involves first."""
    diff = pair.diff
    parts: list[RenderableType] = [
        Text.assemble(("tool changes: ", "bold"), (f"{pair.run_a} → {pair.run_b}", "dim"))
    ]
    if diff.is_empty:
        parts.append(Text("No tool schema changed since the baseline.", style="green"))
    for name in diff.added:
        parts.append(Text(f"+ {name} added", style="bold green"))
    for name in diff.removed:
        parts.append(Text(f"- {name} removed", style="bold red"))
    changes = sorted(diff.changed, key=lambda c: c.name not in involved)
    for change in changes:
        mark = "  ← this case's tool" if change.name in involved else ""
        parts.append(Text.assemble(("~ ", "yellow"), (change.name, "bold yellow"), (mark, "dim")))
        if change.description_changed:
            parts.append(Text.assemble("  ", word_diff_text(change.description)))
        for param in change.params:
            parts.append(Text(f"  parameter {param.name}: {param.kind}", style="yellow"))
    return Group(*parts)


# Each table's columns in order, with the rank at which a narrow pane folds them away
# (highest first; 0 never): what folds is still in the detail pane below the tables.
SUITE_RUN_COLUMNS: tuple[tuple[str, int], ...] = (
    ("suite", 0),
    ("started", 0),
    ("model", 2),
    ("passed", 0),
    ("baseline", 1),
)
CASE_COLUMNS: tuple[tuple[str, int], ...] = (
    ("case", 0),
    ("rate", 0),
    ("baseline", 1),
    ("status", 0),
)
CELL_PADDING = 2  # a DataTable cell's padding, both sides together


def suite_run_line(suite_run: SuiteRun) -> Text:
    """Every column of a suite run on one line, those a narrow pane folded away included."""
    run = suite_run.run
    return Text.assemble(
        (str(run["suite"]), "bold"),
        (
            f"  started {run['started']}  ·  model {run.get('model') or '—'}  ·  "
            f"baseline {run.get('baseline') or '—'}  ·  "
            f"{run['passed_cases']}/{run['cases']} cases passed",
            "dim",
        ),
    )


def fitting_columns(
    columns: tuple[tuple[str, int], ...], rows: list[list[Text | str]], width: int
) -> list[int]:
    """The indexes of the columns that fit `width` cells: the foldable ones go, highest
    rank first, until the rest fit (the key columns stay whatever the width)."""
    widths = [
        max(
            [
                len(title),
                *(
                    Text(cell).cell_len if isinstance(cell, str) else cell.cell_len
                    for cell in (row[i] for row in rows)
                ),
            ]
        )
        + CELL_PADDING
        for i, (title, _) in enumerate(columns)
    ]
    shown = list(range(len(columns)))
    for rank in sorted({r for _, r in columns if r}, reverse=True):
        if sum(widths[i] for i in shown) <= width:
            break
        shown = [i for i in shown if columns[i][1] != rank]
    return shown


def fill_table(
    table: DataTable[Any],
    columns: tuple[tuple[str, int], ...],
    rows: list[tuple[str, list[Text | str]]],
) -> None:
    """Fill `table` with the columns of `rows` (key, cells) that fit its width, keeping the
    cursor on the row it was on."""
    cursor = table.cursor_row
    width = table.scrollable_content_region.width or table.size.width
    shown = fitting_columns(columns, [cells for _, cells in rows], width) if width else None
    keep = shown if shown is not None else list(range(len(columns)))
    table.clear(columns=True)
    table.add_columns(*(columns[i][0] for i in keep))
    for key, cells in rows:
        table.add_row(*(cells[i] for i in keep), key=key)
    if rows:
        table.move_cursor(row=min(cursor, len(rows) - 1))


def involved_tools(case: dict[str, Any], names: set[str]) -> set[str]:
    """Tool names the case's expectation or its samples' choices mention."""
    said = f"{case.get('expected') or ''} {case.get('chosen') or ''}"
    return {name for name in names if name in said}


class RegressScreen(WorkbenchScreen):
    """Regression results: suites, each case's pass rate against the baseline, what changed."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("g", "reload", "Reload"),
        Binding("tab", "app.focus_next", "Switch table", show=False),
    ]

    class Loaded(Message):
        def __init__(self, runs: list[SuiteRun]) -> None:
            super().__init__()
            self.runs = runs

    class DiffReady(Message):
        def __init__(self, case_id: str, renderable: RenderableType) -> None:
            super().__init__()
            self.case_id = case_id
            self.renderable = renderable

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[SuiteRun] = []
        self.selected: SuiteRun | None = None
        self.case_id: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text("regression results", style="bold"), classes="summary")
        with Horizontal():
            yield DataTable(id="suite-runs", cursor_type="row", zebra_stripes=True)
            yield DataTable(id="suite-cases", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="case-detail"):
            yield Static(Text("loading suite runs…", style="dim"), id="case-body")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "regressions"
        self.query_one("#suite-runs", DataTable).focus()
        self._load()

    def on_resize(self) -> None:
        # The panes have their new widths only once laid out.
        self.call_after_refresh(self._fill_runs)

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _load(self) -> None:
        self.post_message(self.Loaded(self.backend.regressions()))

    def on_regress_screen_loaded(self, message: Loaded) -> None:
        self.runs = message.runs
        self._fill_runs()
        if not message.runs:
            self._show(
                Text(
                    "No suite runs stored yet. `workbench test SUITE` runs a regression suite "
                    "and stores its results here.",
                    style="dim",
                )
            )

    def _fill_runs(self) -> None:
        rows: list[tuple[str, list[Text | str]]] = []
        for suite_run in self.runs:
            run = suite_run.run
            # Text, not str: a DataTable reads a string cell as markup, and these are the
            # suite's own names.
            cells: list[Text | str] = [
                Text(str(run["suite"])),
                str(run["started"]),
                Text(str(run.get("model") or "")),
                f"{run['passed_cases']}/{run['cases']}",
                Text(str(run.get("baseline") or "—")),
            ]
            rows.append((suite_run.suite_run_id, cells))
        fill_table(self.query_one("#suite-runs", DataTable), SUITE_RUN_COLUMNS, rows)

    def _fill_cases(self, suite_run: SuiteRun) -> None:
        rows: list[tuple[str, list[Text | str]]] = [
            (
                str(case["case_id"]),
                [
                    Text(str(case["case_id"])),
                    _rate(case.get("pass_rate")),
                    _rate(case.get("baseline_rate")),
                    case_status(case),
                ],
            )
            for case in suite_run.cases
        ]
        fill_table(self.query_one("#suite-cases", DataTable), CASE_COLUMNS, rows)

    @on(DataTable.RowHighlighted, "#suite-runs")
    def _run_highlighted(self, event: DataTable.RowHighlighted) -> None:
        found = next((r for r in self.runs if r.suite_run_id == event.row_key.value), None)
        if found is None:
            return
        self.selected = found
        self._fill_cases(found)
        failing = sum(1 for case in found.cases if case.get("status") != "pass")
        self._show(
            Group(
                suite_run_line(found),
                Text(
                    f"{len(found.cases) - failing} of {len(found.cases)} cases pass. Select a "
                    "failing or regressed case to see what changed in the tool descriptions "
                    "since the baseline.",
                    style="dim",
                ),
            )
        )

    @on(DataTable.RowHighlighted, "#suite-cases")
    def _case_highlighted(self, event: DataTable.RowHighlighted) -> None:
        suite_run = self.selected
        if suite_run is None:
            return
        case = next((c for c in suite_run.cases if c["case_id"] == event.row_key.value), None)
        if case is None:
            return
        self.case_id = str(case["case_id"])
        head = Text.assemble(
            (str(case["case_id"]), "bold"),
            "  ",
            case_status(case),
            (
                f"  {case.get('passed')}/{case.get('samples')} samples passed "
                f"({_rate(case.get('pass_rate'))}, needs {_rate(case.get('min_pass_rate'))}; "
                f"baseline {_rate(case.get('baseline_rate'))})",
                "dim",
            ),
        )
        lines: list[RenderableType] = [
            suite_run_line(suite_run),
            head,
            Text.assemble(("expected: ", "bold dim"), str(case.get("expected") or "—")),
            Text.assemble(("chosen:   ", "bold dim"), str(case.get("chosen") or "—")),
        ]
        self._show(Group(*lines))
        if case.get("status") != "pass":
            self._case_diff(suite_run, case)

    @work(thread=True, exclusive=True, group="diff", exit_on_error=False)
    def _case_diff(self, suite_run: SuiteRun, case: dict[str, Any]) -> None:
        run = suite_run.run
        pair = self.backend.regression_schema_diff(
            str(run["suite"]), run.get("baseline"), suite_run.suite_run_id
        )
        names = {str((t.get("function") or t).get("name")) for t in pair.tools_a + pair.tools_b}
        involved = involved_tools(case, names)
        self.post_message(
            self.DiffReady(str(case["case_id"]), render_description_diff(pair, involved))
        )

    def on_regress_screen_diff_ready(self, message: DiffReady) -> None:
        if message.case_id != self.case_id:
            return  # the user has moved on to another case
        body = self.query_one("#case-body", Static)
        body.update(Group(body.content, Text(""), message.renderable))  # type: ignore[arg-type]

    def _show(self, renderable: RenderableType) -> None:
        self.query_one("#case-body", Static).update(renderable)

    def action_reload(self) -> None:
        self._load()

    def palette_commands(self) -> Iterator[PaletteCommand]:
        yield ("Reload regression results", "Read the stored suite runs again", self.action_reload)
