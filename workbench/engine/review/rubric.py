"""Rubric files for `workbench judge`: what an LLM judge scores, on what, and how.

    [rubric]
    name = "helpful"              # the judge's annotations are by `judge:helpful`
    version = 1                   # bump when the instructions change: runs are judged again
    target = "answer"             # answer (the final answer) | turn (each turn)
                                  # | tool_call (each tool choice)
    instructions = "Score how well the answer addresses the task."
    max_output_tokens = 200       # the judge's answer is capped here (and costed at it)

    [scores]                      # name = what it measures; each a number in `scale`
    helpful = "1: answers the task fully; 0: not at all"
    # scale = [0, 1]              # in [rubric]: the range every score must fall in

Parsing is pure; every mistake is one `RubricError` line naming the file and the key.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from traces.user_files import read_text

Target = Literal["answer", "turn", "tool_call"]
TARGETS: tuple[Target, ...] = ("answer", "turn", "tool_call")
_RUBRIC_KEYS = {"name", "version", "target", "instructions", "max_output_tokens", "scale"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class RubricError(Exception):
    """A rubric file that cannot be used; one line naming the file and what to fix."""


@dataclass(frozen=True)
class Rubric:
    name: str
    version: int
    target: Target
    instructions: str
    scores: dict[str, str]  # name -> what it measures
    scale: tuple[float, float] = (0.0, 1.0)
    max_output_tokens: int = 200

    @property
    def author(self) -> str:
        """Who the judge's annotations are by."""
        return f"judge:{self.name}"


def load_rubric(path: Path) -> Rubric:
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise RubricError(f"cannot read rubric {path}: {why}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RubricError(f"{path}: not valid TOML: {exc}") from None
    return parse_rubric(data, str(path))


def parse_rubric(data: dict[str, Any], where: str) -> Rubric:
    unknown = sorted(set(data) - {"rubric", "scores"})
    if unknown:
        raise RubricError(f"{where}: unknown section {unknown[0]!r}; use [rubric] and [scores]")
    head = data.get("rubric")
    if not isinstance(head, dict):
        raise RubricError(f"{where}: needs a [rubric] table with name, version and target")
    extra = sorted(set(head) - _RUBRIC_KEYS)
    if extra:
        raise RubricError(
            f"{where} [rubric]: unknown key {extra[0]!r}; "
            f"allowed: {', '.join(sorted(_RUBRIC_KEYS))}"
        )
    name = head.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise RubricError(f"{where} [rubric]: name must be letters, digits, '-', '_' or '.'")
    version = head.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise RubricError(f"{where} [rubric]: version must be a whole number >= 1")
    target = head.get("target", "answer")
    if target not in TARGETS:
        raise RubricError(f"{where} [rubric]: target must be one of {', '.join(TARGETS)}")
    instructions = head.get("instructions")
    if not isinstance(instructions, str) or not instructions.strip():
        raise RubricError(f"{where} [rubric]: instructions must say what to judge (a string)")
    cap = head.get("max_output_tokens", 200)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise RubricError(f"{where} [rubric]: max_output_tokens must be a whole number >= 1")
    scale = head.get("scale", [0, 1])
    if (
        not isinstance(scale, list)
        or len(scale) != 2
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in scale)
        or not scale[0] < scale[1]
    ):
        raise RubricError(f"{where} [rubric]: scale must be [LOW, HIGH] numbers, LOW < HIGH")
    scores = data.get("scores")
    if not isinstance(scores, dict) or not scores:
        raise RubricError(f'{where}: needs a [scores] table of name = "what it measures"')
    for score, meaning in scores.items():
        if not _NAME.match(score) or score == "reason":
            raise RubricError(f"{where} [scores]: {score!r} is not a usable score name")
        if not isinstance(meaning, str) or not meaning.strip():
            raise RubricError(f"{where} [scores]: {score} must say what it measures (a string)")
    return Rubric(
        name=name,
        version=version,
        target=cast(Target, target),
        instructions=instructions.strip(),
        scores={str(k): str(v) for k, v in scores.items()},
        scale=(float(scale[0]), float(scale[1])),
        max_output_tokens=cap,
    )
