"""A list of any length that renders only the rows on screen and fetches them in pages.

The runs list (100,000 runs) and the replay timeline (20,000 events) both use it: the owner
gives the row count and a `fetch(offset, limit)` function; pages are loaded in a thread
worker on first sight and kept in a small LRU cache, so memory stays at a few pages
whatever the size of the table behind it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

T = TypeVar("T")

Fetch = Callable[[int, int], list[Any]]
RenderRow = Callable[[Any, int, int], Text]  # (row, index, width) -> line


class PagedList(ScrollView, Generic[T], can_focus=True):
    DEFAULT_CSS = """
    PagedList { height: 1fr; overflow-x: hidden; }
    PagedList > .paged-list--cursor { background: $accent 40%; }
    PagedList:focus > .paged-list--cursor { background: $accent; color: $text; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"paged-list--cursor"}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
        Binding("enter", "select", "Open", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=True)

    class Highlighted(Message):
        def __init__(self, paged_list: PagedList[Any], index: int, row: Any | None) -> None:
            super().__init__()
            self.paged_list = paged_list
            self.index = index
            self.row = row

        @property
        def control(self) -> PagedList[Any]:
            return self.paged_list

        def can_replace(self, message: Message) -> bool:
            # Scrolling fast posts one per row; only where the cursor came to rest matters.
            # A Selected is an action: it neither replaces nor is replaced.
            return (
                type(self) is type(message) is PagedList.Highlighted
                and isinstance(message, PagedList.Highlighted)
                and message.paged_list is self.paged_list
            )

    class Selected(Highlighted):
        pass

    class PageLoaded(Message):
        def __init__(self, generation: int, page: int, rows: list[Any]) -> None:
            super().__init__()
            self.generation = generation
            self.page = page
            self.rows = rows

    def __init__(
        self,
        fetch: Fetch,
        render_row: RenderRow,
        *,
        page_size: int = 200,
        cache_pages: int = 8,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._fetch = fetch
        self._render_row = render_row
        self.page_size = page_size
        self._pages: LRUCache[int, list[Any]] = LRUCache(cache_pages)
        self._pending: set[int] = set()
        self._generation = 0
        self.total = 0

    # ------------------------------------------------------------------ data

    def reset(self, total: int, cursor: int = 0, *, keep_scroll: bool = False) -> None:
        """New data behind the list (a new filter, a new run): drop every cached page.

        `keep_scroll` leaves the view where it is (rows arrived while the user reads)."""
        self._generation += 1
        self._pages.clear()
        self._pending.clear()
        self.total = total
        self.virtual_size = Size(self.size.width, total)
        self.cursor = min(max(cursor, 0), max(total - 1, 0))
        if not keep_scroll:
            self.scroll_to(y=0, animate=False)
            # A list opened at a row further down (the replay at its event) shows that row,
            # in the middle, once its height is known.
            self.call_after_refresh(self._show_cursor, True)
        self.refresh()

    def row(self, index: int) -> Any | None:
        """The row at `index` if its page is loaded; else schedules the page and says None."""
        if not 0 <= index < self.total:
            return None
        page = index // self.page_size
        rows = self._pages.get(page)
        if rows is None:
            self._request(page)
            return None
        offset = index - page * self.page_size
        return rows[offset] if offset < len(rows) else None

    def refresh_rows(self) -> None:
        """Re-render visible rows (e.g. marks changed) without refetching."""
        self.refresh()

    def _request(self, page: int) -> None:
        if page in self._pending:
            return
        self._pending.add(page)
        self._load_page(self._generation, page)

    @work(thread=True, group="pages", exit_on_error=False)
    def _load_page(self, generation: int, page: int) -> None:
        rows = self._fetch(page * self.page_size, self.page_size)
        self.post_message(self.PageLoaded(generation, page, rows))

    def on_paged_list_page_loaded(self, message: PageLoaded) -> None:
        message.stop()
        if message.generation != self._generation:
            return
        self._pending.discard(message.page)
        self._pages[message.page] = message.rows
        self.refresh()
        start = message.page * self.page_size
        if start <= self.cursor < start + len(message.rows):
            self._post_highlight()

    def on_worker_state_changed(self, event: Any) -> None:
        if event.worker.error is not None:
            self._pending.clear()
            report = getattr(self.app, "report_error", None)
            if report is not None:
                report(event.worker.error)

    # ------------------------------------------------------------------ rendering

    def render_line(self, y: int) -> Strip:
        # The width left of the scrollbar: a line laid out for the whole width would lose
        # its right end (the runs list's tokens, say) under the scrollbar.
        width = self.scrollable_content_region.width
        index = round(self.scroll_offset.y) + y
        if index >= self.total:
            return Strip.blank(width, self.rich_style)
        row = self.row(index)
        text = Text("  …", style="dim") if row is None else self._render_row(row, index, width)
        text.truncate(width, pad=True)
        style = self.rich_style
        if index == self.cursor:
            style = style + self.get_component_rich_style("paged-list--cursor")
        strip = Strip(list(text.render(self.app.console, end=""))).apply_style(style)
        return strip.crop_extend(0, width, style)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, self.total)

    # ------------------------------------------------------------------ cursor

    def watch_cursor(self, old: int, new: int) -> None:
        if self.total == 0:
            return
        self._show_cursor()
        self.refresh()
        self._post_highlight()

    def _show_cursor(self, centre: bool = False) -> None:
        """Scroll the cursor's row into view: just so (stepping), or to the middle."""
        top = round(self.scroll_offset.y)
        height = self.scrollable_content_region.height or self.size.height
        if top <= self.cursor < top + height:
            return
        if centre:
            self.scroll_to(y=max(0, self.cursor - height // 2), animate=False)
        elif self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        else:
            self.scroll_to(y=self.cursor - height + 1, animate=False)

    def _post_highlight(self) -> None:
        self.post_message(self.Highlighted(self, self.cursor, self.row(self.cursor)))

    def move_to(self, index: int) -> None:
        if self.total:
            self.cursor = min(max(index, 0), self.total - 1)

    def action_cursor(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_to(self.cursor + direction * max(1, self.size.height - 1))

    def action_jump(self, index: int) -> None:
        self.move_to(self.total - 1 if index < 0 else index)

    def action_select(self) -> None:
        if self.total:
            self.post_message(self.Selected(self, self.cursor, self.row(self.cursor)))

    def on_click(self, event: Click) -> None:
        index = round(self.scroll_offset.y) + event.y
        if 0 <= index < self.total:
            self.move_to(index)
            if event.chain >= 2:
                self.action_select()
