"""The light line check: `traces.line_check` reads every line as the event models do
(`traces.reader.validate_line`), the same verdict and the same errors, without loading them;
its schema file is what the current models derive. The Hypothesis fuzzer over damaged real
traces checks the same promise (tests/store/test_fuzz_traces.py)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter, field_validator

from tests.support.line_checks import assert_same_verdicts, outcome
from tests.support.streams import stream_files
from traces import line_check, line_schema
from traces.events import RunStart
from traces.line_check import SCHEMA_FILE, check_line, check_lines
from traces.reader import validate_line

GOLDEN = Path(__file__).parents[1] / "fixtures" / "traces"
GOLDEN_FILES = sorted(GOLDEN.glob("v*/*.jsonl"))

# Values of every JSON kind, and numbers at the edges the models draw.
WRONG_VALUES: list[Any] = [
    "maybe", "5", "", 1.5, 2.0, -1, 0, 1, True, None, [], {}, [1], {"x": 1}, [{"x": 1}],
    2**31, 2**63 - 1, 2**63, 2**64, "2026-11-30T10:00:00", "2026-11-30 10:00:00+05:30",
    "2026-13-30T10:00:00Z", "10000-01-01T00:00:00Z", 1_764_496_800, "run_start", "mcp:fs",
]  # fmt: skip


def test_the_committed_schema_is_what_the_models_derive() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == line_schema.render(), (
        f"{SCHEMA_FILE.name} is not what the event models in traces/events.py derive under "
        "this pydantic: regenerate it with `.venv/bin/python -m traces.line_schema` and "
        "commit it"
    )


@pytest.fixture
def schema_of_another_pydantic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The schema file as another version of pydantic_core would have left it."""
    stored = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    stored["pydantic_core"] = "0.0.1"
    copy = tmp_path / SCHEMA_FILE.name
    copy.write_text(json.dumps(stored), encoding="utf-8")
    monkeypatch.setattr(line_check, "SCHEMA_FILE", copy)
    line_check._schema.cache_clear()
    yield
    line_check._schema.cache_clear()


@pytest.mark.usefixtures("schema_of_another_pydantic")
def test_a_schema_derived_under_another_pydantic_gives_way_to_the_models() -> None:
    lines = GOLDEN_FILES[-1].read_bytes().splitlines()
    assert isinstance(check_line(lines[0]), RunStart)  # an event: the models read it
    assert_same_verdicts(b"\n".join(lines[:3]) + b'\n{"type": "run_end"}\n')


class _Clamped(BaseModel):
    seq: int

    @field_validator("seq")
    @classmethod
    def _not_too_big(cls, seq: int) -> int:
        if seq > 10:
            raise ValueError("too big")
        return seq


def test_deriving_refuses_a_validator_it_cannot_keep_as_data() -> None:
    with pytest.raises(ValueError, match=r"seq.*_Clamped._not_too_big cannot be kept as data"):
        line_schema.derive(TypeAdapter(_Clamped))


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=lambda path: path.name)
def test_golden_traces_read_the_same(path: Path) -> None:
    data = path.read_bytes()
    assert_same_verdicts(data)
    # and both admit every whole line of them
    assert all(line.problem is None for line in check_lines(io.BytesIO(data), check_line)), path


def _valid_records() -> Iterator[dict[str, Any]]:
    """One decoded line of each shape the golden traces hold (v1 lines migrated)."""
    seen: set[tuple[str, ...]] = set()
    for path in GOLDEN_FILES:
        for line in check_lines(io.BytesIO(path.read_bytes()), validate_line):
            record = json.loads(line.text)
            shape = (record["type"], *sorted(record))
            if shape not in seen:
                seen.add(shape)
                yield record


def _damaged(record: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The record with each field missing, of each wrong value, or unknown; the same one
    level down in nested objects and in the first item of lists of objects."""
    yield record | {"zz_unknown": 1}
    for wrong in WRONG_VALUES:  # every field at once: the errors come in the models' order
        yield {key: wrong for key in record} | {"type": record["type"]}
    for key, value in record.items():
        yield {k: v for k, v in record.items() if k != key}
        for wrong in WRONG_VALUES:
            yield record | {key: wrong}
        inner = value[0] if isinstance(value, list) and value else value
        if isinstance(inner, dict):
            for inner_key in [*inner, "zz_unknown"]:
                for wrong in WRONG_VALUES[:14]:
                    changed = inner | {inner_key: wrong}
                    yield record | {key: [changed, *value[1:]] if inner is not value else changed}


def test_damaged_lines_get_the_same_verdict_and_errors() -> None:
    checked = refused = 0
    for record in _valid_records():
        for damaged in _damaged(record):
            text = json.dumps(damaged)
            verdict = outcome(check_line, text)
            assert verdict == outcome(validate_line, text), text
            checked += 1
            refused += verdict is not None
    assert checked > 5_000 and refused > checked // 2  # the sweep reached both verdicts


@pytest.mark.parametrize("text", [b"", b"   ", b"garbage{", b"[1]", b"null", b'"x"', b"\xff{}"])
def test_lines_that_are_no_object_get_the_same_errors(text: bytes) -> None:
    assert outcome(check_line, text) is not None
    assert outcome(check_line, text) == outcome(validate_line, text)


@pytest.mark.parametrize("path", stream_files(), ids=lambda path: path.stem[:40])
def test_captured_stream_payloads_read_the_same(path: Path) -> None:
    """Real provider payloads of every odd shape, as the data of events and as lines."""
    chunk = {
        "run_id": "r1", "seq": 3, "ts": "2026-03-01T09:30:00.000000Z", "turn": 1,
        "type": "model_chunk", "index": 0, "elapsed_ms": 1.5,
    }  # fmt: skip
    frame = chunk | {"type": "mcp_message", "server": "fs", "direction": "recv"}
    del frame["index"], frame["elapsed_ms"]
    lines = []
    for raw in path.read_bytes().splitlines():
        payload = json.loads(raw)
        lines += [raw, json.dumps(chunk | {"data": payload}).encode()]
        lines.append(json.dumps(frame | {"frame": payload}).encode())
        lines.append(json.dumps(payload | {"run_id": "r1", "seq": 1, "type": "tool_end"}).encode())
    valid = [line for line in lines if outcome(validate_line, line) is None]
    assert valid  # the events wrapping the payloads are valid lines
    assert_same_verdicts(b"\n".join(lines) + b"\n")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        # A tool call's own `"type"` (nested, given once each) is no repeat of the line's.
        (b'{"type":"x","m":[{"type":"function"},{"type":"function"}]}', None),
        # A nested object that repeats a key: only the line's own keys count.
        (b'{"type":"x","m":{"type":1,"type":2}}', None),
        (b'{"run_id":"a","m":{"type":1},"run_id":"b","type":"x"}', "run_id"),
        (b'{"seq":1,"type":"x","seq":2,"type":"y"}', "seq"),
        (b'[{"type":1,"type":2}]', None),  # not an object: refused for that instead
        (b'{"type":1,"type":', None),  # not JSON: refused for that instead
    ],
)
def test_a_key_given_twice_is_the_lines_own(text: bytes, why: str | None) -> None:
    found = line_check.repeated_key(text)
    expected = None if why is None else f"the key '{why}' is given twice"
    assert (found if found is None else found.partition(" (")[0]) == expected
