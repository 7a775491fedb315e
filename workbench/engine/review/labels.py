"""The review queue's keys: one key a label, from `<home>/labels.toml`, else the defaults.

    # <home>/labels.toml
    [keys]
    g = "good"
    b = "bad"
    t = "wrong-tool"

A key is one letter or digit (case counts: `g` and `G` are two keys) that the review screen
does not use itself (`SCREEN_KEYS`); a label is any text of one line. The file replaces the
defaults whole. A file that cannot be used is one line naming what to fix (`LabelsError`).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

LABELS_FILE = "labels.toml"

DEFAULT_LABELS: dict[str, str] = {
    "g": "good",
    "b": "bad",
    "w": "wrong-tool",
    "l": "loop",
    "h": "hallucination",
    "a": "bad-arguments",
}

# The review screen's own keys (`workbench.tui.review_screen` binds these and no others):
# a label cannot take one.
SCREEN_KEYS: dict[str, str] = {
    "n": "note",
    "s": "skip",
    "u": "undo",
    "p": "previous",
    "o": "open the run",
    "q": "quit",
}

_KEY = re.compile(r"[A-Za-z0-9]")


class LabelsError(ValueError):
    """A labels file that cannot be used, as one line."""


@dataclass(frozen=True)
class LabelKeys:
    keys: dict[str, str]  # key -> label, in the file's order
    source: Path | None  # the file they came from; None: the defaults

    def described(self) -> str:
        return "  ".join(f"{key} {label}" for key, label in self.keys.items())


def labels_file(home: Path) -> Path:
    return home / LABELS_FILE


def load_labels(home: Path) -> LabelKeys:
    """The keys of `<home>/labels.toml`, or the defaults when there is none."""
    path = labels_file(home)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return LabelKeys(dict(DEFAULT_LABELS), None)
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise LabelsError(f"{path}: cannot read it ({why or exc})") from None
    return LabelKeys(parse_labels(text, str(path)), path)


def parse_labels(text: str, where: str = LABELS_FILE) -> dict[str, str]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LabelsError(f"{where}: not valid TOML ({exc})") from None
    example = 'e.g. [keys] then g = "good"'
    other = sorted(set(data) - {"keys"})
    if other:
        raise LabelsError(f"{where}: unknown entry {other[0]!r}; only a [keys] table, {example}")
    keys = data.get("keys")
    if not isinstance(keys, dict) or not keys:
        raise LabelsError(f"{where}: give a [keys] table of one key a label, {example}")
    for key, label in keys.items():
        if not _KEY.fullmatch(key):
            raise LabelsError(f"{where}: key {key!r} must be one letter or digit")
        if key in SCREEN_KEYS:
            raise LabelsError(
                f"{where}: key {key!r} is the review screen's {SCREEN_KEYS[key]} key; "
                "choose another"
            )
        if not isinstance(label, str) or not label.strip() or "\n" in label:
            raise LabelsError(f"{where}: the label of key {key!r} must be text of one line")
    return {key: label.strip() for key, label in keys.items()}
