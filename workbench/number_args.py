"""Number types for command-line flags, shared by every `workbench` command and the pytest
plugin's options: a bad value is one usage line ("--limit: must be greater than 0").

Only argparse here, so both the CLI and the plugin can import it without importing each other.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T", int, float)


def _number(
    convert: Callable[[str], T], what: str, low: T, high: T | None, *, low_ok: bool
) -> Callable[[str], T]:
    """An argparse type: `convert`, refusing values below `low` (or at it, unless `low_ok`)
    and above `high`."""

    def parse(text: str) -> T:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if value < low or (value == low and not low_ok):
            raise argparse.ArgumentTypeError(
                f"must be {'at least' if low_ok else 'greater than'} {low}"
            )
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}")
        return value

    return parse


# Counts and limits, seconds, rates and ports.
positive_int = _number(int, "a whole number", 0, None, low_ok=False)
positive_float = _number(float, "a number", 0.0, None, low_ok=False)
fraction = _number(float, "a number from 0 to 1", 0.0, 1.0, low_ok=True)
port_number = _number(int, "a port number", 0, 65535, low_ok=True)
# Thresholds, where 0 is a value like any other.
non_negative_int = _number(int, "a whole number", 0, None, low_ok=True)
non_negative_float = _number(float, "a number", 0.0, None, low_ok=True)
