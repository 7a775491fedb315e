"""The Document widget (the diff screens' result): a long renderable is rendered once, in a
thread, at the width it is shown at, and only the lines on screen are drawn."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from rich.console import Console, ConsoleOptions, Group
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult

from tests.tui.conftest import settle
from workbench.tui.document import Document

SIZE = (80, 24)
SCROLLBAR = 2  # Textual's vertical scrollbar, in columns


class Counted:
    """`lines` lines of text that note where and at which width they were rendered."""

    def __init__(self, lines: int) -> None:
        self.lines = lines
        self.renders: list[tuple[bool, int]] = []  # (on the event loop's thread, width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        self.renders.append(
            (threading.current_thread() is threading.main_thread(), options.max_width)
        )
        for number in range(self.lines):
            yield Text(f"line {number}")


class Shows(App[None]):
    def compose(self) -> ComposeResult:
        yield Document(Text("loading…"), id="doc")


def _screen_lines(document: Document) -> list[str]:
    return [document.render_line(y).text.rstrip() for y in range(document.size.height)]


async def test_a_long_renderable_is_rendered_once_off_the_event_loop() -> None:
    app = Shows()
    async with app.run_test(size=SIZE) as pilot:
        document = app.query_one(Document)
        content = Counted(500)
        document.update(content)
        await settle(pilot, lambda: document.rendered)
        # Once, in a worker thread, as wide as what the scrollbar leaves.
        assert content.renders == [(False, SIZE[0] - SCROLLBAR)]
        assert document.virtual_size.height == 500
        assert _screen_lines(document)[:2] == ["line 0", "line 1"]

        document.scroll_end(animate=False)
        await settle(pilot, lambda: _screen_lines(document)[-1] == "line 499")
        assert content.renders == [(False, SIZE[0] - SCROLLBAR)]  # scrolling renders nothing


async def test_what_fits_takes_the_whole_width_and_a_resize_renders_again() -> None:
    app = Shows()
    async with app.run_test(size=SIZE) as pilot:
        document = app.query_one(Document)
        content = Counted(3)
        document.update(content)
        await settle(pilot, lambda: document.rendered)
        assert content.renders[-1] == (False, SIZE[0])  # no scrollbar: the whole width
        assert _screen_lines(document)[:4] == ["line 0", "line 1", "line 2", ""]

        await pilot.resize_terminal(100, 24)
        await settle(pilot, lambda: document.rendered and content.renders[-1][1] == 100)
        assert not any(on_loop for on_loop, _ in content.renders)


async def test_a_group_shows_the_lines_rich_renders() -> None:
    table = Table("turn", "A", "B", expand=True, show_lines=True)
    for turn in range(1, 40):
        table.add_row(str(turn), f"read_file(src/mod{turn}.py) → ok " * 3, "—")
    content = Group(Text("First divergence at turn 1.", style="bold red"), Text(""), table)
    app = Shows()
    async with app.run_test(size=SIZE) as pilot:
        document = app.query_one(Document)
        document.update(content)
        await settle(pilot, lambda: document.rendered)
        console = Console(width=SIZE[0] - SCROLLBAR)
        expected = [
            "".join(segment.text for segment in line).rstrip()
            for line in console.render_lines(content, pad=False)
        ]
        assert document.virtual_size.height == len(expected)
        assert _screen_lines(document) == expected[: document.size.height]
        assert document.content is content
