"""The light line check (`traces.line_check`) held to the event models (`traces.reader`)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from pydantic_core import ValidationError

from traces.line_check import check_line, check_lines, describe_validation_error
from traces.reader import validate_line
from traces.versions import NewerSchemaError


def outcome(validate: Callable[[str | bytes], object], text: str | bytes) -> Any:
    """None for a valid line; for a refused one, every error and the phrase a user sees."""
    try:
        validate(text)
    except ValidationError as exc:
        return exc.errors(include_url=False), describe_validation_error(exc)
    return None


def verdicts(data: bytes, validate: Callable[[str], object]) -> list[Any]:
    """What `check_lines` makes of a trace file's bytes with this validation."""
    found: list[Any] = []
    try:
        for line in check_lines(io.BytesIO(data), validate):
            found.append((line.number, line.text, line.problem, line.schema_version))
            assert (line.event is None) == (line.problem is not None)
    except NewerSchemaError as exc:
        found.append(("newer schema", exc.line, exc.version))
    return found


def assert_same_verdicts(data: bytes) -> None:
    """Each line of a trace file's bytes, as it stands and as `check_lines` reads it
    (decoded, migrated), gets the same verdict and errors from the light check as from the
    models."""
    for raw in data.split(b"\n"):
        assert outcome(check_line, raw) == outcome(validate_line, raw), raw[:300]
    assert verdicts(data, check_line) == verdicts(data, validate_line)
