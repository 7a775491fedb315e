"""A long Rich renderable, scrolled: rendered to lines once, in a thread, drawn a screen at a time.

The comparison of two runs is a table of 100 turns and every text that differs in them,
2,000 lines and more. In a `Static` inside a scrolling container, Textual renders all of it
on the event loop, several times over (its height, then its lines, again once the scrollbar
takes a column), and the screen freezes for a second or more. This widget renders it once,
in a thread worker, at the width it will be shown at, and draws only the lines on screen
(Textual's Line API, as `PagedList` does for rows).

    document = Document(Text("loading…"), id="pair-result")
    document.update(render_comparison(comparison))   # shown once rendered
    document.content                                 # what it was last given
"""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.segment import Segment
from textual import work
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import Worker, WorkerState, get_current_worker


class Document(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    Document { width: 1fr; height: 1fr; overflow-x: hidden; overflow-y: auto; }
    """

    class Rendered(Message):
        def __init__(
            self,
            key: tuple[int, int, int],
            line_width: int,
            lines: list[list[Segment]],
            complete: bool,
        ) -> None:
            super().__init__()
            self.key = key  # (generation, width, height) it was rendered for
            self.line_width = line_width  # the width it was laid out in
            self.lines = lines  # from the first line on
            self.complete = complete  # else the first screenful and more, the rest to come

    def __init__(self, content: RenderableType, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._content = content
        self._generation = 0
        # The rendered lines as segments; a line becomes a Strip when it is on screen (a
        # Strip carries a dozen caches: thousands of them would be garbage to collect).
        self._lines: list[list[Segment]] = []
        self._strips: dict[int, Strip] = {}
        self._shown: tuple[int, int] | None = None  # (generation, width) of those lines
        # (generation, width, height) of the render on its way; an older one is dropped.
        self._rendering: tuple[int, int, int] | None = None

    @property
    def content(self) -> RenderableType:
        """The renderable last given (its lines may still be on their way)."""
        return self._content

    @property
    def rendered(self) -> bool:
        """The lines on screen are those of `content` at the widget's width (those below
        the screen may still be on their way)."""
        return self._shown == (self._generation, self.size.width)

    def update(self, content: RenderableType) -> None:
        self._content = content
        self._generation += 1
        self._render_now()

    def on_resize(self) -> None:
        self._render_now()

    def _render_now(self) -> None:
        width, height = self.size
        if width <= 0 or self._rendering == (self._generation, width, height):
            return  # not laid out yet (a resize follows), or on its way
        self._rendering = key = (self._generation, width, height)
        # What the worker needs is read here, on the event loop: the console's options (a
        # copy) and the scrollbar's width, so the thread touches no widget state.
        options = self.app.console_options.update(highlight=False)
        scrollbar = self.styles.scrollbar_size_vertical
        self._render_lines(self._content, key, scrollbar, self.app.console, options)

    @work(thread=True, exclusive=True, group="document", exit_on_error=False)
    def _render_lines(
        self,
        content: RenderableType,
        key: tuple[int, int, int],
        scrollbar: int,
        console: Console,
        options: ConsoleOptions,
    ) -> None:
        _, width, height = key
        # Laid out as a scrolling container lays out a Static: narrower by the scrollbar
        # when it does not fit the height, else the whole width. A group's parts render
        # one after the other (their lines are the group's), and once they fill the screen
        # those lines are shown while the rest renders.
        worker = get_current_worker()
        narrow = max(width - scrollbar, 1)
        lines: list[list[Segment]] = []
        shown = False
        for part in _parts(content):
            if worker.is_cancelled:
                return  # a newer render (new content or size) took its place
            lines += console.render_lines(part, options.update_width(narrow), pad=False)
            if not shown and len(lines) > height:
                self.post_message(self.Rendered(key, narrow, list(lines), complete=False))
                shown = True
        if len(lines) <= height and narrow != width:
            lines = console.render_lines(content, options.update_width(width), pad=False)
            narrow = width
        self.post_message(self.Rendered(key, narrow, lines, complete=True))

    def on_document_rendered(self, message: Rendered) -> None:
        message.stop()
        if message.key != self._rendering:
            return  # the content or the size changed meanwhile: a newer render follows
        if message.complete:
            self._rendering = None
        generation, width, _ = message.key
        self._lines = message.lines
        self._strips = {}
        self._shown = (generation, width)
        self.virtual_size = Size(message.line_width, len(self._lines))
        self.refresh()

    def render_line(self, y: int) -> Strip:
        # The widget's style under the text, as a Static's; what is left of the line is
        # Textual's to fill with the background, as for any widget.
        index = round(self.scroll_offset.y) + y
        if index >= len(self._lines):
            return Strip([])
        line = self._strips.get(index)
        if line is None:
            if len(self._strips) > 4 * max(self.size.height, 1):
                self._strips.clear()  # scrolled on: keep about a screen's worth
            line = self._strips[index] = Strip(self._lines[index])
        width = self.scrollable_content_region.width or self.size.width
        if line.cell_length > width:  # resized narrower: cut until it is rendered again
            line = line.crop(0, width)
        return line.apply_style(self.rich_style)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self._rendering = None
            report = getattr(self.app, "report_error", None)
            if report is not None:
                report(event.worker.error)


def _parts(content: RenderableType) -> Iterator[RenderableType]:
    """A renderable's parts in order: a group's (nested ones too), else itself."""
    if isinstance(content, Group):
        for part in content.renderables:
            yield from _parts(part)
    else:
        yield content
