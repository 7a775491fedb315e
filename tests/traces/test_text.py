"""`traces.text`: the one way a value is shortened to one line, and the one format of a
duration, a count and a waterfall bar, for the CLI, the TUI and export alike."""

from __future__ import annotations

from traces.text import bar_cells, one_line, short_count, short_ms


def test_whitespace_runs_become_one_space() -> None:
    assert one_line("  a\n\tb  \r\n c ") == "a b c"
    assert one_line(None) == ""


def test_a_long_text_is_cut_to_the_limit_with_an_ellipsis() -> None:
    assert one_line("one two three", 13) == "one two three"
    cut = one_line("one two\nthree four", 10)
    assert cut == "one two t…" and len(cut) == 10
    assert one_line("abc", 1) == "…"


def test_text_people_read_is_cut_at_a_word_boundary_when_one_is_near() -> None:
    assert one_line("one two three four five", 16, at_word=True) == "one two three…"
    # No space in the last third: cut mid-word as without `at_word`.
    assert one_line("one twothreefour", 12, at_word=True) == "one twothre…"


def test_one_duration_format_for_the_cli_the_tui_and_export() -> None:
    durations = (4.14, 9.96, 850, 999.7, 1234, 9_996, 59_940, 59_960, 245_000, 5_999_000)
    assert [short_ms(ms) for ms in durations] == [
        "4.1 ms",
        "10 ms",
        "850 ms",
        "1.00 s",
        "1.23 s",
        "10.0 s",
        "59.9 s",
        "1m00s",
        "4m05s",
        "99m59s",
    ]


def test_a_waterfall_bar_is_at_least_one_cell_inside_its_track() -> None:
    assert bar_cells(0, 50, 100, 10) == (0, 5)
    assert bar_cells(99, 100, 100, 10) == (9, 10)
    assert bar_cells(30, 30, 100, 10) == (3, 4)
    assert bar_cells(0, 0, 0, 10) == (0, 1)


def test_counts_are_short() -> None:
    assert [short_count(n) for n in (9999, 12_345, 4_500_000)] == ["9999", "12.3k", "4.5M"]
