"""Text on one line, for every place that shows or records a value in a line of its own, and
the short forms of counts, durations and waterfall bars that the CLI, the TUI and export all
print: one format each, so the same run reads the same everywhere."""

from __future__ import annotations


def one_line(text: str | None, limit: int | None = None, *, at_word: bool = False) -> str:
    """`text` with each run of whitespace (newlines too) as one space; past `limit`
    characters, cut to `limit` with "…" as the last one. `at_word`: cut at the last word
    boundary instead when one is near (in the last third), for text people read."""
    flat = " ".join((text or "").split())
    if limit is None or len(flat) <= limit:
        return flat
    cut = flat[: max(0, limit - 1)]
    if at_word:
        space = cut.rfind(" ")
        if space >= limit * 2 // 3:
            cut = cut[:space]
    return cut + "…"


def short_count(n: int) -> str:
    """`9999`, `12.3k`, `4.5M`."""
    if n < 10_000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def short_ms(ms: float) -> str:
    """A duration to three figures: `4.1 ms`, `850 ms`, `1.23 s`, `12.3 s`, `4m05s` (never
    wider than 6 characters below 100 minutes, so it fits the narrow columns of the runs
    list and of `workbench stats`)."""
    if ms < 9.95:
        return f"{ms:.1f} ms"
    if ms < 999.5:
        return f"{ms:.0f} ms"
    if ms < 9_995:
        return f"{ms / 1000:.2f} s"
    if ms < 59_950:
        return f"{ms / 1000:.1f} s"
    seconds = round(ms / 1000)
    return f"{seconds // 60}m{seconds % 60:02d}s"


def bar_cells(start: float, end: float, total: float, width: int) -> tuple[int, int]:
    """Where a span from `start` to `end` of `total` falls on a `width`-cell waterfall track:
    its first cell and the cell after its last, at least one cell wide."""
    scale = width / total if total > 0 else 0.0
    first = min(width - 1, int(start * scale))
    last = max(first + 1, min(width, round(end * scale)))
    return first, last
