"""Text on one line, for every place that shows or records a value in a line of its own."""

from __future__ import annotations


def one_line(text: str | None, limit: int | None = None) -> str:
    """`text` with each run of whitespace (newlines too) as one space; past `limit`
    characters, cut to `limit` with "…" as the last one."""
    flat = " ".join((text or "").split())
    if limit is None or len(flat) <= limit:
        return flat
    return flat[: max(0, limit - 1)] + "…"
