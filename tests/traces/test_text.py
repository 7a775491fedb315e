"""`traces.text.one_line`: the one way a value is shortened to one line."""

from __future__ import annotations

from traces.text import one_line


def test_whitespace_runs_become_one_space() -> None:
    assert one_line("  a\n\tb  \r\n c ") == "a b c"
    assert one_line(None) == ""


def test_a_long_text_is_cut_to_the_limit_with_an_ellipsis() -> None:
    assert one_line("one two three", 13) == "one two three"
    cut = one_line("one two\nthree four", 10)
    assert cut == "one two t…" and len(cut) == 10
    assert one_line("abc", 1) == "…"
