"""Tool-call arguments: plain JSON, one repair attempt, or a clear error for the model."""

from __future__ import annotations

import pytest

from agent_core.wire.arguments import parse_arguments


@pytest.mark.parametrize("raw", [None, "", "  "])
def test_blank_or_null_arguments_are_empty(raw: str | None) -> None:
    parsed = parse_arguments(raw)
    assert parsed.value == {} and parsed.error is None and not parsed.repaired


def test_valid_json_is_not_repaired() -> None:
    parsed = parse_arguments('{"path": "a.txt", "limit": 3}')
    assert parsed.value == {"path": "a.txt", "limit": 3} and not parsed.repaired


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"path": "a.txt"} trailing words', {"path": "a.txt"}),
        ('{"path": "a.txt"}{"path": "a.txt"}', {"path": "a.txt"}),
        ("{'path': 'a.txt', 'note': 'say \"hi\"'}", {"path": "a.txt", "note": 'say "hi"'}),
        ('{"path": "a.txt"', {"path": "a.txt"}),
        ('{"path": "a.tx', {"path": "a.tx"}),
        ('{"paths": ["a", "b"', {"paths": ["a", "b"]}),
        ('{"path": "a.txt",}', {"path": "a.txt"}),
        ('```json\n{"path": "a.txt"}\n```', {"path": "a.txt"}),
        ('Sure: {"path": "a.txt"}', {"path": "a.txt"}),
        ("{'it''s': 1}".replace("''", "\\'"), {"it's": 1}),
    ],
)
def test_one_repair_attempt_fixes_common_breakage(raw: str, expected: dict) -> None:
    parsed = parse_arguments(raw)
    assert parsed.error is None, parsed.error
    assert parsed.value == expected and parsed.repaired
    assert parsed.repaired_text is not None


@pytest.mark.parametrize("raw", ["not json at all", '{"a": tru', "[1, 2]", '"just a string"'])
def test_unrepairable_arguments_ask_the_model_to_resend(raw: str) -> None:
    parsed = parse_arguments(raw)
    assert parsed.value is None
    assert parsed.error is not None and "again" in parsed.error
    assert "\n" not in parsed.error


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"a": "x\\', "Unterminated string starting at position 6"),
        ("not json at all", "Expecting value at position 0"),
    ],
)
def test_the_json_error_says_where_once(raw: str, problem: str) -> None:
    parsed = parse_arguments(raw)
    assert parsed.error == (
        f"arguments are not valid JSON ({problem}); please send the tool call again with valid JSON"
    )
