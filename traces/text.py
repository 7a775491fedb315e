"""Text on one line, for every place that shows or records a value in a line of its own, and
the short forms of counts and durations that the TUI and the CLI's charts print."""

from __future__ import annotations


def one_line(text: str | None, limit: int | None = None) -> str:
    """`text` with each run of whitespace (newlines too) as one space; past `limit`
    characters, cut to `limit` with "…" as the last one."""
    flat = " ".join((text or "").split())
    if limit is None or len(flat) <= limit:
        return flat
    return flat[: max(0, limit - 1)] + "…"


def short_count(n: int) -> str:
    """`9999`, `12.3k`, `4.5M`."""
    if n < 10_000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def short_ms(ms: float) -> str:
    """`850ms`, `12.3s`, `4m05s`."""
    if ms < 1000:
        return f"{ms:.0f}ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f}s"
    return f"{int(ms // 60_000)}m{int(ms % 60_000 // 1000):02d}s"
