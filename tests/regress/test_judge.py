"""Judging one sample's decisions against a case."""

from __future__ import annotations

from workbench.engine.regress.context import ToolCall
from workbench.engine.regress.runner import judge
from workbench.engine.regress.suite import Case


def calls(*names: str, **args: object) -> list[ToolCall]:
    return [ToolCall(name, dict(args)) for name in names]


def test_expect_tool_checks_the_first_turn() -> None:
    case = Case(id="c", task="t", expect_tool="read_file")
    assert judge(case, [calls("read_file")]) == (True, "")
    assert judge(case, [calls("list_dir"), calls("read_file")]) == (False, "chose list_dir")
    assert judge(case, []) == (False, "chose no tool")
    assert judge(case, [calls("list_dir", "read_file")])[0]  # parallel calls count


def test_expect_args_is_a_subset_match() -> None:
    case = Case(id="c", task="t", expect_tool="read_file", expect_args={"path": "notes.txt"})
    assert judge(case, [calls("read_file", path="notes.txt", max_lines=5)])[0]
    assert judge(case, [calls("read_file", path="x.txt")]) == (
        False,
        "argument path='x.txt', expected 'notes.txt'",
    )
    assert judge(case, [[ToolCall("read_file", None)]]) == (
        False,
        "arguments were not valid JSON",
    )


def test_sequence_and_not_tool() -> None:
    case = Case(id="c", task="t", expect_sequence=("list_dir", "read_file"))
    assert judge(case, [calls("list_dir"), calls("read_file")])[0]
    assert judge(case, [calls("read_file")]) == (False, "called read_file")
    avoid = Case(id="c", task="t", expect_not_tool="calculator")
    assert judge(avoid, [calls("read_file")])[0]
    assert judge(avoid, [calls("calculator")]) == (False, "called calculator")
    assert judge(avoid, [])[0]
