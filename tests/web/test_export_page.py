"""The HTML export (`workbench export RUN --format html`) in a real headless Chromium,
opened from a file: it renders the run, a turn's `<details>` opens on a click and shows
its tool call, the page's own script runs under its policy (open all), a hostile trace's
text shows as text and runs nothing, and the page made no request but for itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.engine.test_export_html import XSS_RESULT, XSS_TASK
from tests.support.browser import chromium_page
from tests.support.demo import demo_run
from tests.support.processes import workbench_at
from traces.home import traces_dir

if TYPE_CHECKING:
    from playwright.sync_api import Dialog

pytestmark = pytest.mark.browser


def export_page(home: Path, run: str, path: Path) -> Path:
    done = workbench_at(home, "export", run, "--format", "html", "-o", str(path))
    assert done.returncode == 0, done.stderr
    return path


def test_the_page_renders_its_tree_opens_and_it_asks_for_nothing(
    demo_home: Path, tmp_path: Path
) -> None:
    run = demo_run(demo_home, "tool-error-recovered")
    page_file = export_page(demo_home, run, tmp_path / "run.html")
    requests: list[str] = []
    said: list[str] = []
    with chromium_page(tmp_path / "profile") as page:
        page.on("request", lambda request: requests.append(request.url))
        page.on("console", lambda message: said.append(f"{message.type}: {message.text}"))
        page.goto(page_file.as_uri())
        assert page.title() == f"Run {run}"
        turns = page.locator("details.turn")
        assert turns.count() == 4
        second = turns.nth(1)
        assert second.evaluate("d => d.open") is False  # an ok turn starts closed
        result = second.locator("pre", has_text="units.py")
        assert not result.is_visible()
        second.locator("summary").first.click()
        assert second.evaluate("d => d.open") is True
        assert second.locator("summary", has_text="list_dir").first.is_visible()
        second.locator("details.tool > summary").first.click()
        assert result.is_visible()  # the call's result, under its arguments
        page.get_by_role("button", name="open all").click()  # the page's own script
        assert page.evaluate("[...document.querySelectorAll('details')].every(d => d.open)")
    assert requests == [page_file.as_uri()]
    assert said == []  # no policy violation, no error


def test_a_hostile_trace_shows_as_text_and_runs_nothing(demo_home: Path, tmp_path: Path) -> None:
    run = demo_run(demo_home, "tool-error-recovered")
    home = tmp_path / "home"
    trace = traces_dir(home) / f"{run}.jsonl"
    trace.parent.mkdir(parents=True)
    events = [json.loads(line) for line in (traces_dir(demo_home) / f"{run}.jsonl").open()]
    for event in events:
        if event["type"] == "run_start":
            event["task"] = XSS_TASK
        if event["type"] == "tool_end":
            event["result"] = XSS_RESULT
    trace.write_text("".join(json.dumps(event) + "\n" for event in events))
    page_file = export_page(home, run, tmp_path / "hostile.html")
    dialogs: list[str] = []
    requests: list[str] = []
    with chromium_page(tmp_path / "profile") as page:

        def seen(dialog: Dialog) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", seen)
        page.on("request", lambda request: requests.append(request.url))
        page.goto(page_file.as_uri())
        page.get_by_role("button", name="open all").click()
        text = page.inner_text("body")
        assert XSS_TASK in text and XSS_RESULT in text
        assert page.evaluate("document.scripts.length") == 1
    assert dialogs == []
    assert requests == [page_file.as_uri()]  # the task's <img src=x> stayed text
