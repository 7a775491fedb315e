"""How each screen looks, at 120x36 on the golden traces (no clocks, no random ids)."""

from __future__ import annotations

from pathlib import Path

from tests.tui.conftest import COMPLETED, ERROR, MAX_TURNS, pair_result, plain, settle
from workbench.tui import Endpoint, WorkbenchApp
from workbench.tui.diff_screens import ChainCompareScreen, SchemaDiffScreen
from workbench.tui.paged_list import PagedList
from workbench.tui.run_screen import RunScreen

SIZE = (120, 36)
# A fixed endpoint, so the fork dialog never shows this machine's environment.
ENDPOINT = Endpoint(base_url="http://127.0.0.1:8080/v1", model="local-model")


def _app(home: Path) -> WorkbenchApp:
    # Ingest before the app starts: its notice about the golden incomplete run's cut-off
    # last line names the temporary folder, which would differ in every snapshot.
    from traces.store import TraceStore

    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
    return WorkbenchApp(home, endpoint=ENDPOINT, ingest=False)


async def _runs_loaded(pilot) -> None:
    await settle(
        pilot, lambda: pilot.app.screen.query_one("#runs-list", PagedList).row(7) is not None
    )


def test_runs_screen(snap_compare, home: Path) -> None:
    assert snap_compare(_app(home), terminal_size=SIZE, run_before=_runs_loaded)


def test_run_screen_at_first_error(snap_compare, home: Path) -> None:
    async def run_before(pilot) -> None:
        await _runs_loaded(pilot)
        pilot.app.open_run(ERROR, jump_to_error=True)

        def at_error() -> bool:
            screen = pilot.app.screen
            node = screen.chain_tree.cursor_node if isinstance(screen, RunScreen) else None
            return node is not None and node.data is not None and node.data.kind == "tool"

        await settle(pilot, at_error)

    assert snap_compare(_app(home), terminal_size=SIZE, run_before=run_before)


def test_replay_screen(snap_compare, home: Path) -> None:
    async def run_before(pilot) -> None:
        await _runs_loaded(pilot)
        pilot.app.open_replay(MAX_TURNS, 8)
        await settle(pilot, lambda: pilot.app.screen.timeline.row(8) is not None)

    assert snap_compare(_app(home), terminal_size=SIZE, run_before=run_before)


def test_chain_compare_screen(snap_compare, home: Path) -> None:
    async def run_before(pilot) -> None:
        await _runs_loaded(pilot)
        pilot.app.open_compare(MAX_TURNS, COMPLETED)
        await pair_result(pilot, ChainCompareScreen, "aligning")

    assert snap_compare(_app(home), terminal_size=SIZE, run_before=run_before)


def test_schema_diff_screen(snap_compare, home: Path) -> None:
    async def run_before(pilot) -> None:
        await _runs_loaded(pilot)
        pilot.app.open_schema_diff(MAX_TURNS, COMPLETED)
        await pair_result(pilot, SchemaDiffScreen, "diffing")

    assert snap_compare(_app(home), terminal_size=SIZE, run_before=run_before)


def test_fork_screen(snap_compare, home: Path) -> None:
    async def run_before(pilot) -> None:
        await _runs_loaded(pilot)
        pilot.app.open_fork(ERROR, 2, mock_call="call_e1")
        # Opened to mock a call, the dialog focuses the mocked result's box once it shows.
        await settle(pilot, lambda: getattr(pilot.app.focused, "id", None) == "fork-mock")
        # The fork's plan (turns from the log, each tool's policy) shows before it runs.
        plan = pilot.app.screen.query_one("#fork-plan")
        await settle(pilot, lambda: "fire live" in plain(plan))
        # The same cursor and scroll however long that took: the plan made the form taller.
        # A steady cursor, its lines drawn again: those drawn while it blinked are cached
        # by whether the blink had shown it, which depends on how long the dialog took.
        mock = pilot.app.focused
        mock.cursor_blink = False
        mock.notify_style_update()
        pilot.app.screen.query_one("#fork-form").scroll_home(animate=False)
        await settle(pilot)
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(_app(home), terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare, home: Path) -> None:
    async def run_before(pilot) -> None:
        await _runs_loaded(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(_app(home), terminal_size=SIZE, run_before=run_before)


def test_runs_screen_at_100_columns(snap_compare, home: Path) -> None:
    assert snap_compare(_app(home), terminal_size=(100, 30), run_before=_runs_loaded)


def test_timeline_screen(snap_compare, home: Path) -> None:
    (home / "prices.toml").write_text(
        '[models."gpt-4o-mini-2024-07-18"]\ninput = 0.15\noutput = 0.60\n'
    )

    async def run_before(pilot) -> None:
        from workbench.tui.timeline_screen import TimelineScreen

        await _runs_loaded(pilot)
        pilot.app.open_timeline(MAX_TURNS)
        await settle(
            pilot,
            lambda: isinstance(pilot.app.screen, TimelineScreen) and pilot.app.screen.view,
        )

    assert snap_compare(_app(home), terminal_size=SIZE, run_before=run_before)


def test_regression_results_screen(snap_compare, home: Path) -> None:
    from tests.tui.test_journey import store_suite_results

    store_suite_results(home)

    async def run_before(pilot) -> None:
        from workbench.tui.regress_screen import RegressScreen

        await _runs_loaded(pilot)
        pilot.app.open_regressions()
        await settle(
            pilot, lambda: isinstance(pilot.app.screen, RegressScreen) and pilot.app.screen.runs
        )
        await pilot.press("tab", "down")
        await settle(
            pilot, lambda: "tool changes" in plain(pilot.app.screen.query_one("#case-body"))
        )

    assert snap_compare(_app(home), terminal_size=SIZE, run_before=run_before)
