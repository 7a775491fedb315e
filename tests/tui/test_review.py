"""The review queue in the TUI (issue 39, part 2): one key labels a run and moves on, so 20
runs take 20 keystrokes; n notes, s skips, u undoes (a tombstone); the queue resumes where
it stopped; `Q` on the runs list reviews the runs it shows; labels come from
<home>/labels.toml, and a bad one is one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.binding import Binding
from textual.pilot import Pilot
from textual.widgets import Static

from tests.review.test_queue import UNREVIEWED_FAILED, make_runs
from tests.tui.conftest import notices, plain, settle
from traces.annotations import author_file
from traces.store import RunQuery
from workbench.engine.review.labels import DEFAULT_LABELS, SCREEN_KEYS, labels_file
from workbench.engine.review.queue import QueueSpec
from workbench.tui import WorkbenchApp
from workbench.tui.review_screen import ReviewScreen
from workbench.tui.runs_screen import RunsScreen

SIZE = (120, 40)
FAILED = QueueSpec(UNREVIEWED_FAILED, "failed, unreviewed")


def records(home: Path) -> list[dict[str, Any]]:
    path = author_file(home, "alice")
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def app_on(home: Path, review: QueueSpec | None = FAILED) -> WorkbenchApp:
    return WorkbenchApp(home, watch=False, review=review, author="alice")


def app_of(pilot: Pilot[Any]) -> WorkbenchApp:
    app = pilot.app
    assert isinstance(app, WorkbenchApp)
    return app


async def shown(pilot: Pilot[Any]) -> ReviewScreen:
    """The review screen once its queue is open and the current run's card drawn."""
    app = pilot.app

    def ready() -> bool:
        screen = app.screen
        if not isinstance(screen, ReviewScreen) or screen.queue is None:
            return False
        current = screen.queue.current
        return current is None or (screen.card is not None and screen.card.row == current)

    await settle(pilot, ready)
    assert isinstance(app.screen, ReviewScreen)
    return app.screen


def progress(screen: ReviewScreen) -> str:
    return plain(screen.query_one("#review-progress", Static))


def test_the_screen_binds_only_the_keys_labels_may_not_take() -> None:
    keys = [b.key if isinstance(b, Binding) else b[0] for b in ReviewScreen.BINDINGS]
    letters = {key for key in keys if len(key) == 1}
    assert letters == set(SCREEN_KEYS) - {"q"}  # q quits, from the App's bindings


async def test_twenty_runs_take_twenty_keystrokes(tmp_path: Path) -> None:
    ids = make_runs(tmp_path, failed=20, completed=3)
    keys = [list(DEFAULT_LABELS)[n % 4] for n in range(20)]  # g b w l g b …
    async with app_on(tmp_path).run_test(size=SIZE) as pilot:
        screen = await shown(pilot)
        assert "0 of 20 reviewed · run 1 of 20" in progress(screen)
        card = plain(screen.query_one("#review-card", Static))
        assert ids[0] in card and "read the units" in card and "max_turns" in card
        assert "read_file" in card and "no file" in card  # the failing call, in brief
        for key in keys:
            await pilot.press(key)
        screen = await shown(pilot)
        assert "20 of 20 reviewed · end of the queue" in progress(screen)
    written = records(tmp_path)
    assert [(r["run_id"], r["labels"]) for r in written] == [
        (run_id, [DEFAULT_LABELS[key]]) for run_id, key in zip(ids[:20], keys, strict=True)
    ]


async def test_skip_undo_and_a_note_from_the_keyboard(tmp_path: Path) -> None:
    ids = make_runs(tmp_path, failed=3)
    async with app_on(tmp_path).run_test(size=SIZE) as pilot:
        await shown(pilot)
        await pilot.press("b", "s")
        screen = await shown(pilot)
        assert screen.queue is not None and screen.queue.cursor == 2
        await pilot.press("u")  # the skip
        screen = await shown(pilot)
        assert "1 of 3 reviewed · run 2 of 3" in progress(screen)
        await pilot.press("u")  # the label: a tombstone
        screen = await shown(pilot)
        assert "0 of 3 reviewed · run 1 of 3" in progress(screen)
        assert any("Undid the label" in n.message for n in notices(app_of(pilot)))
        await pilot.press("n")
        await settle(pilot, lambda: pilot.app.screen.query("#note-text"))
        await pilot.press(*"asks twice", "enter")
        screen = await shown(pilot)
        assert '"asks twice"' in plain(screen.query_one("#review-card", Static))
        assert "1 of 3 reviewed · run 1 of 3" in progress(screen)  # a note stays on the run
    written = records(tmp_path)
    assert [r["type"] for r in written] == ["note", "remove", "note"]
    assert written[1]["removes"] == written[0]["id"]
    assert (written[2]["run_id"], written[2]["text"]) == (ids[0], "asks twice")


async def test_the_queue_resumes_where_it_stopped(tmp_path: Path) -> None:
    ids = make_runs(tmp_path, failed=4, completed=2)
    async with app_on(tmp_path).run_test(size=SIZE) as pilot:
        await shown(pilot)
        await pilot.press("g", "s", "l")
    async with app_on(tmp_path).run_test(size=SIZE) as pilot:
        screen = await shown(pilot)  # the unreviewed queue: what was labelled dropped out
        assert screen.queue is not None
        assert [row.run_id for row in screen.queue.rows] == [ids[1], ids[3]]
        assert "2 of 4 reviewed · run 1 of 2" in progress(screen)

    async def review_the_list(pilot: Pilot[Any]) -> ReviewScreen:
        await settle(pilot, lambda: isinstance(pilot.app.screen, RunsScreen))
        await settle(
            pilot,
            lambda: (
                isinstance(pilot.app.screen, RunsScreen) and pilot.app.screen.runs_list.total == 6
            ),
        )
        await pilot.press("Q")
        return await shown(pilot)

    async with app_on(tmp_path, review=None).run_test(size=SIZE) as pilot:
        screen = await review_the_list(pilot)  # every run listed, from the oldest
        assert screen.spec.name == "runs list: all" and screen.queue is not None
        assert screen.queue.current is not None and screen.queue.current.run_id == ids[0]
        await pilot.press("s", "s", "s")
    async with app_on(tmp_path, review=None).run_test(size=SIZE) as pilot:
        screen = await review_the_list(pilot)
        assert screen.queue is not None and screen.queue.current is not None
        assert screen.queue.current.run_id == ids[3]
        assert "2 of 6 reviewed · run 4 of 6" in progress(screen)


async def test_labels_come_from_the_home_and_a_bad_file_is_one_line(tmp_path: Path) -> None:
    ids = make_runs(tmp_path, failed=2)
    labels_file(tmp_path).write_text('[keys]\nG = "great"\n')
    async with app_on(tmp_path).run_test(size=SIZE) as pilot:
        screen = await shown(pilot)
        assert "G  great" in plain(screen.query_one("#review-keys", Static))
        await pilot.press("g")  # not a label here
        await pilot.press("G")
        await shown(pilot)
    assert [(r["run_id"], r["labels"]) for r in records(tmp_path)] == [(ids[0], ["great"])]

    labels_file(tmp_path).write_text('[keys]\nu = "ugly"\n')
    async with app_on(tmp_path, review=None).run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: isinstance(pilot.app.screen, RunsScreen))
        await pilot.press("Q")
        await settle(pilot, lambda: notices(app_of(pilot)))
        assert isinstance(pilot.app.screen, RunsScreen)
        (notice,) = notices(app_of(pilot))
        assert "key 'u' is the review screen's undo key" in notice.message
        assert "\n" not in notice.message


@pytest.mark.parametrize("spec", [QueueSpec(RunQuery(failed_only=True), "none failed")])
async def test_an_empty_queue_says_so(tmp_path: Path, spec: QueueSpec) -> None:
    make_runs(tmp_path, failed=0, completed=2)
    async with app_on(tmp_path, review=spec).run_test(size=SIZE) as pilot:
        screen = await shown(pilot)
        assert "Nothing left in this queue: 0 of 0 reviewed" in plain(
            screen.query_one("#review-card", Static)
        )
        await pilot.press("g", "s", "u")  # nothing to label, skip or undo: no failure
        assert any("Nothing to undo" in n.message for n in notices(app_of(pilot)))


async def test_at_80_columns_the_progress_and_the_keys_show_whole(tmp_path: Path) -> None:
    make_runs(tmp_path, failed=5)
    async with app_on(tmp_path).run_test(size=(80, 24)) as pilot:
        screen = await shown(pilot)
        assert "0 of 5 reviewed · run 1 of 5" in plain(
            screen.query_one("#review-progress", Static), 80
        )
        keys = plain(screen.query_one("#review-keys", Static), 80)
        assert all(f"{key}  {label}" in keys for key, label in DEFAULT_LABELS.items())
        await pilot.press("question_mark")  # help lists every label key too
        await settle(pilot, lambda: type(pilot.app.screen).__name__ == "HelpScreen")
        shown_help = plain(pilot.app.screen.query_one("Static", Static), 80)
        assert all(label in shown_help for label in DEFAULT_LABELS.values())
