"""Suite files: what parses, what is refused (one line each), and appending a case."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.engine.regress.suite import (
    Case,
    SuiteError,
    append_case,
    load_suite,
    parse_suite,
)

GOOD = """
[suite]
name = "file-tools"
samples = 3
tools = "builtin"

[[case]]
id = "read-notes"
task = "What does notes.txt say?"
expect_tool = "read_file"
expect_args = { path = "notes.txt" }
min_pass_rate = 0.66

[[case]]
id = "from-recording"
from_run = "abc123"
turn = 2
expect_sequence = ["list_dir", "read_file"]
expect_not_tool = "calculator"
"""


def test_a_suite_parses_with_defaults(tmp_path: Path) -> None:
    suite = parse_suite(GOOD, tmp_path / "s.wbsuite.toml")
    assert suite.name == "file-tools" and suite.samples == 3 and suite.tools == "builtin"
    first, second = suite.cases
    assert first.expect_args == {"path": "notes.txt"} and first.min_pass_rate == 0.66
    assert second.from_run == "abc123" and second.turn == 2 and second.min_pass_rate == 1.0
    assert second.turns_needed == 2
    assert suite.samples_for(first) == 3 and suite.samples_for(first, 5) == 5
    assert first.expected_text() == 'read_file(path="notes.txt")'


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("[suite\n", "not valid TOML"),
        ("[suite]\nname='x'\n", "no cases"),
        ("[[case]]\nid='a'\ntask='t'\n", "no expectation"),
        ("[[case]]\nid='a'\nexpect_tool='x'\n", "either task"),
        ("[[case]]\nid='a'\ntask='t'\nfrom_run='r'\nturn=1\nexpect_tool='x'\n", "either task"),
        ("[[case]]\nid='a'\nfrom_run='r'\nexpect_tool='x'\n", "needs turn"),
        (
            "[[case]]\nid='a'\ntask='t'\nexpect_tool='x'\nexpect_tol='y'\n",
            "unknown key 'expect_tol'",
        ),
        ("[[case]]\nid='a'\ntask='t'\nexpect_tool='x'\nmin_pass_rate=2\n", "from 0 to 1"),
        ("[suite]\nsamples=0\n[[case]]\nid='a'\ntask='t'\nexpect_tool='x'\n", ">= 1"),
        ("[[case]]\nid='a b'\ntask='t'\nexpect_tool='x'\n", "needs an id"),
        (
            "[[case]]\nid='a'\ntask='t'\nexpect_tool='x'\n[[case]]\nid='a'\ntask='u'\nexpect_tool='x'\n",
            "appears twice",
        ),
        ("[[case]]\nid='a'\ntask='t'\nexpect_args={p=1}\n", "needs expect_tool"),
        ("[[case]]\nid='a'\ntask='t'\nexpect_sequence='read_file'\n", "list of tool names"),
    ],
)
def test_mistakes_are_one_line_errors(tmp_path: Path, text: str, phrase: str) -> None:
    with pytest.raises(SuiteError) as caught:
        parse_suite(text, tmp_path / "bad.toml")
    message = str(caught.value)
    assert phrase in message and "\n" not in message
    assert str(tmp_path / "bad.toml") in message


def test_missing_file_is_a_suite_error(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="cannot read suite"):
        load_suite(tmp_path / "nope.toml")


def test_append_case_keeps_the_file_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "suite.wbsuite.toml"
    path.write_text(GOOD, encoding="utf-8")
    case = Case(
        id="captured-1",
        from_run="run42",
        turn=3,
        expect_tool="read_file",
        expect_args={"path": 'odd "name".txt', "n": 2},
    )
    append_case(path, case, comment="captured from run42 turn 3")
    text = path.read_text(encoding="utf-8")
    assert text.startswith(GOOD)  # the existing text is untouched
    suite = load_suite(path)
    assert suite.cases[-1] == Case(
        id="captured-1",
        from_run="run42",
        turn=3,
        expect_tool="read_file",
        expect_args={"path": 'odd "name".txt', "n": 2},
    )
    with pytest.raises(SuiteError, match="appears twice"):
        append_case(path, case)
    assert path.read_text(encoding="utf-8") == text  # a refused append writes nothing


def test_append_creates_a_new_suite(tmp_path: Path) -> None:
    path = tmp_path / "new.wbsuite.toml"
    append_case(path, Case(id="c1", task="héllo\x7f\n", expect_not_tool="calculator"))
    suite = load_suite(path)
    assert suite.name == "new" and suite.cases[0].task == "héllo\x7f\n"
