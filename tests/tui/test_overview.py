"""Pictures in the TUI (issue 25, item 11): the overview screen (`o` on the runs list) charts
runs, failures, tokens, cost and latency by day and by model from the same figures as
`workbench stats`; the timeline draws each turn's tokens beside its waterfall."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.widgets import Footer, Sparkline, Static

from tests.support.stats_home import OTHER_MODEL, spread_runs
from tests.tui.conftest import MAX_TURNS, golden_usage, plain, settle
from workbench.cli import main
from workbench.tui import WorkbenchApp
from workbench.tui.help import HelpScreen
from workbench.tui.overview_screen import OverviewScreen
from workbench.tui.paged_list import PagedList
from workbench.tui.runs_screen import RunsScreen
from workbench.tui.timeline_screen import INPUT_BAR, OUTPUT_BAR, TimelineScreen, Waterfall

SIZE = (120, 40)


def _cli_stats(home: Path, capsys, *argv: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["--home", str(home), "stats", "--json", *argv]) == 0
    found: dict[str, Any] = json.loads(capsys.readouterr().out)
    return found


async def _runs_shown(pilot, app: WorkbenchApp) -> None:
    await settle(
        pilot,
        lambda: (
            isinstance(app.screen, RunsScreen)
            and app.screen.query_one("#runs-list", PagedList).total == 8
        ),
    )


async def test_the_overview_charts_runs_by_day_and_by_model(tmp_path: Path, capsys) -> None:
    home = spread_runs(tmp_path / "home")
    # What `workbench stats` says, asked before the app runs (it takes over stdout).
    expected = _cli_stats(home, capsys)
    week = _cli_stats(home, capsys, "--days", "7")
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await _runs_shown(pilot, app)
        footer_keys = {k for k, b in app.screen.active_bindings.items() if b.binding.show}
        assert "o" in footer_keys and app.screen.query_one(Footer)
        await pilot.press("question_mark")
        await settle(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert "Overview" in plain(app.screen.query_one(Static))
        await pilot.press("escape", "o")
        await settle(pilot, lambda: isinstance(app.screen, OverviewScreen) and app.screen.stats)
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        for figure in ("runs", "failures", "tokens", "cost", "p95_ms"):
            data = list(screen.query_one(f"#chart-{figure}", Sparkline).data or [])
            assert len(data) == 30, figure
            assert data == [float(day[figure] or 0) for day in expected["by_day"]], figure
        assert data[-3:] != [0.0, 0.0, 0.0]  # the runs are on the last three days
        totals = plain(screen.query_one("#overview-totals", Static))
        assert "8 runs" in totals and "7 failed (88%)" in totals and "$" in totals
        models = plain(screen.query_one("#overview-models", Static))
        lines = {line.split()[0]: line for line in models.splitlines() if line.strip()}
        assert OTHER_MODEL in lines and "gpt-4o-mini-2024-07-18" in lines
        for row in expected["by_model"]:
            cells = lines[row["key"]].split()
            assert str(row["runs"]) in cells and str(row["failures"]) in cells
        assert "█" in lines[OTHER_MODEL] and "▒" in lines[OTHER_MODEL]  # 1 completed, 2 not

        await pilot.press("d")  # the last 7 days
        await settle(pilot, lambda: len(screen.query_one("#chart-runs", Sparkline).data or []) == 7)
        runs = list(screen.query_one("#chart-runs", Sparkline).data or [])
        assert runs == [float(day["runs"]) for day in week["by_day"]]


async def test_the_overview_of_an_unpriced_empty_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    app = WorkbenchApp(home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: isinstance(app.screen, RunsScreen))
        app.open_overview()
        await settle(pilot, lambda: isinstance(app.screen, OverviewScreen) and app.screen.stats)
        assert "No runs recorded yet" in plain(app.screen.query_one("#overview-totals", Static))
        assert not app.screen.query_one("#row-runs").display


async def test_the_timeline_draws_tokens_per_turn_beside_the_waterfall(home: Path) -> None:
    usage = golden_usage(MAX_TURNS)
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.screen.query("#runs-list"))
        app.open_timeline(MAX_TURNS)
        await settle(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.view)
        waterfall = app.screen.query_one("#timeline", Waterfall)
        lines = waterfall.render().plain.splitlines()
        bars = {}
        for turn in usage:
            line = next(line for line in lines if line.startswith(f"turn {turn} "))
            assert line.rstrip().endswith(str(usage[turn]["total_tokens"])), line
            bars[turn] = line.count(INPUT_BAR) + line.count(OUTPUT_BAR)
            assert line.count(OUTPUT_BAR) >= 1 and line.count(INPUT_BAR) > line.count(OUTPUT_BAR)
        # Scaled to the turn with the most tokens: more tokens, a longer bar.
        by_tokens = sorted(usage, key=lambda t: usage[t]["total_tokens"])
        assert [bars[t] for t in by_tokens] == sorted(bars.values())
        assert bars[by_tokens[0]] < bars[by_tokens[-1]]
        # The bars stand in one column beside the waterfall's right edge.
        starts = {line.find(INPUT_BAR) for line in lines if line.startswith("turn ")}
        assert len(starts) == 1
        edge = max(line.rfind("│") for line in lines)
        assert starts.pop() > edge - 12


async def test_the_overview_lists_failure_groups_and_enter_lists_a_groups_runs(
    tmp_path: Path,
) -> None:
    """Issue 38 part 2 in the TUI: the overview shows the biggest failure groups (the same
    signatures `workbench failures` names); Enter on one lists only its runs, escape all."""
    from datetime import UTC, datetime, timedelta

    from textual.widgets import OptionList

    from tests.support.failing_runs import failing_run

    home = tmp_path / "home"
    folder = home / "traces"
    folder.mkdir(parents=True)
    now = datetime.now(UTC).replace(microsecond=0)
    for n in range(3):
        failing_run(folder, f"same{n}", at=now - timedelta(hours=n + 1), error=f"no file f{n}.txt")
    failing_run(folder, "decoy", at=now - timedelta(hours=5), tool="save_note")
    failing_run(folder, "fine", at=now - timedelta(hours=6), status="completed", reason="done")
    app = WorkbenchApp(home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(
            pilot,
            lambda: (
                isinstance(app.screen, RunsScreen)
                and app.screen.query_one("#runs-list", PagedList).total == 5
            ),
        )
        await pilot.press("o")
        await settle(
            pilot,
            lambda: (
                isinstance(app.screen, OverviewScreen)
                and app.screen.query_one("#overview-failures", OptionList).option_count == 2
            ),
        )
        groups = app.screen.query_one("#overview-failures", OptionList)
        biggest = groups.get_option_at_index(0)
        line = str(biggest.prompt)
        assert "3 × max_turns · tool error in read_file" in line and "decoy" not in line
        assert biggest.id is not None and f"[{biggest.id}]" in line

        await pilot.press("f", "enter")
        await settle(
            pilot,
            lambda: (
                isinstance(app.screen, RunsScreen)
                and app.screen.query_one("#runs-list", PagedList).total == 3
            ),
        )
        count = plain(app.screen.query_one("#runs-count", Static))
        assert f"failure group {biggest.id}" in count
        await pilot.press("escape")
        await settle(pilot, lambda: app.screen.query_one("#runs-list", PagedList).total == 5)
