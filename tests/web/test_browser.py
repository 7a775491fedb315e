"""`workbench web` in a real headless Chromium: the printed URL loads the page, its
WebSocket draws the runs list, keys typed in the page reach the TUI, and the page shows
it; a wrong token is refused in the browser too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.browser import chromium_page
from tests.support.demo import demo_runs
from tests.web.served import Served, served

if TYPE_CHECKING:
    from playwright.sync_api import WebSocket

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc"),
]


@pytest.fixture(scope="module")
def web(demo_home: Path) -> Iterator[Served]:
    with served(demo_home) as server:
        yield server


class Screen:
    """What the TUI sent the page's terminal, and the keys the page sent it, as read off
    the page's WebSocket (xterm.js draws on a canvas: its text is not in the DOM)."""

    def __init__(self) -> None:
        self.drawn = b""
        self.keys: list[str] = []

    def received(self, payload: bytes | str) -> None:
        if isinstance(payload, bytes):
            self.drawn += payload

    def sent(self, payload: bytes | str) -> None:
        if isinstance(payload, str) and (message := json.loads(payload))[0] == "stdin":
            self.keys.append(message[1])

    def wait_for(self, ws: WebSocket, *wanted: bytes) -> None:
        """Until the terminal has been sent every one of `wanted` (frames as they come)."""

        def shown(payload: bytes | str) -> bool:
            drawn = self.drawn + (payload if isinstance(payload, bytes) else b"")
            return all(text in drawn for text in wanted)

        if not shown(b""):
            ws.wait_for_event("framereceived", predicate=shown)


def test_the_page_shows_the_runs_list_and_its_keys_reach_the_tui(
    web: Served, demo_home: Path, tmp_path: Path
) -> None:
    screen = Screen()
    with chromium_page(tmp_path / "profile") as page:
        sockets: list[WebSocket] = []

        def opened(ws: WebSocket) -> None:  # before its first frame
            ws.on("framereceived", screen.received)
            ws.on("framesent", screen.sent)
            sockets.append(ws)

        page.on("websocket", opened)
        asked: list[str] = []
        page.on("request", lambda request: asked.append(request.url))
        blocked: list[str] = []
        page.on(
            "requestfailed",
            lambda request: blocked.append(f"{request.url} {request.failure}"),
        )
        page.goto(web.url)
        if not sockets:
            page.wait_for_event("websocket")
        (ws,) = sockets
        assert page.url == f"{web.origin}/"  # the token became a cookie and left the URL
        run_ids = [run_id[:8].encode() for run_id in demo_runs(demo_home).values()]
        screen.wait_for(ws, *run_ids, b"served read-only")
        # The page's terminal shows it (textual-serve's page marks its first screen).
        page.wait_for_function("() => document.body.classList.contains('-first-byte')")
        shot = page.screenshot(path=str(tmp_path / "runs.png"))
        assert shot.startswith(b"\x89PNG")

        page.click("#terminal")
        page.keyboard.press("?")
        screen.wait_for(ws, b"Command palette")  # the help screen
        assert "?" in screen.keys
    # Nothing reached another host (textual-serve's page names a web font: the page's
    # policy stops it before it is sent).
    elsewhere = [url for url in asked if not url.startswith(web.origin + "/")]
    assert blocked == [f"{url} csp" for url in elsewhere], (asked, blocked)


def test_a_wrong_token_is_refused_in_the_browser(web: Served, tmp_path: Path) -> None:
    with chromium_page(tmp_path / "profile") as page:
        answer = page.goto(f"{web.origin}/?token=guessed")
        assert answer is not None and answer.status == 403
        assert "wrong token" in page.inner_text("body")
        assert page.context.cookies() == []
