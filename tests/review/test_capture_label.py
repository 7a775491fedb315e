"""`workbench capture-case --from-label`: a label on the demo's runs becomes a suite that
`workbench test` runs and passes with the demo's scripted model; and the expectations on
a decision's text and on answering without a tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.demo import demo_run
from tests.support.in_process import wb
from workbench.engine.regress.context import ToolCall
from workbench.engine.regress.runner import judge
from workbench.engine.regress.suite import Case, SuiteError, load_suite, parse_suite


def test_a_label_becomes_a_suite_that_runs_and_passes(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    walk = demo_run(home, "max-turns")
    recovered = demo_run(home, "tool-error-recovered")
    completed = demo_run(home, "completed")
    timeout = demo_run(home, "model-timeout")
    call = "call_s2_0"  # the demo's list_dir call at turn 2 of the recovered run
    for target in (f"{walk}:2", f"{recovered[:8]}:2:{call}", completed, timeout):
        code, _, err = wb(home, capsys, "note", target, "--label", "keep")
        assert code == 0, err
    suite = tmp_path / "suites" / "keep.wbsuite.toml"
    suite.parent.mkdir()

    code, out, err = wb(
        home, capsys, "capture-case", "--from-label", "keep", "--suite", str(suite), "--with-args"
    )
    assert code == 0, err
    assert "3 of 4 labelled turn(s) added" in out
    # The run labelled whole timed out before its model answered: one line says so.
    assert err.count("\n") == 1 and f"run {timeout[:12]} turn 1" in err
    cases = {case.id: case for case in load_suite(suite).cases}
    assert cases[f"keep-{walk[:8]}-t2"].expect_tool == "list_dir"
    assert cases[f"keep-{recovered[:8]}-t2"].expect_args == {"path": "src"}
    last = cases[f"keep-{completed[:8]}-t3"]  # labelled whole and completed: its last turn
    assert last.expect_no_tool and last.expect_tool is None
    assert {p.name for p in (suite.parent / "traces").iterdir()} == {
        f"{run}.jsonl" for run in (walk, recovered, completed)
    }

    script = home / "demo-suite-script.json"
    code, out, err = wb(home, capsys, "test", str(suite), "--script", str(script))
    assert code == 0, out + err
    assert "3 passed" in out

    # Again: nothing new, nothing twice.
    code, out, _ = wb(home, capsys, "capture-case", "--from-label", "keep", "--suite", str(suite))
    assert code == 0 and "0 of 4 labelled turn(s) added" in out
    assert len(load_suite(suite).cases) == 3

    code, _, err = wb(home, capsys, "capture-case", "--from-label", "nobody", "--suite", "x.toml")
    assert code == 2 and "no run or turn is labelled 'nobody'" in err


def test_capture_a_turns_text(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    completed = demo_run(home, "completed")
    suite = tmp_path / "text.wbsuite.toml"
    code, _, err = wb(
        home,
        capsys,
        "capture-case",
        completed,
        "--turn",
        "3",
        "--suite",
        str(suite),
        "--with-text",
    )
    assert code == 0, err
    case = load_suite(suite).cases[0]
    assert case.expect_no_tool and case.expect_text and "21.25" in case.expect_text
    code, _, err = wb(
        home,
        capsys,
        "capture-case",
        completed,
        "--turn",
        "1",
        "--suite",
        str(suite),
        "--expect-text",
        "README",
    )
    assert code == 0, err
    case = load_suite(suite).cases[1]
    assert case.expect_tool and case.expect_text == "README"


def test_judging_the_text_and_answering_without_a_tool() -> None:
    said = Case(id="c", task="t", expect_text="Mean is  21.25")
    assert judge(said, [[]], ["The mean is 21.25 °C."])[0]
    assert judge(said, [[]], ["No idea."]) == (False, "answered 'No idea.'")
    assert judge(said, [[]], [""]) == (False, "answered no text")
    plain = Case(id="c", task="t", expect_no_tool=True)
    assert judge(plain, [[]], ["done"])[0]
    assert judge(plain, [[ToolCall("read_file", {})]], [""]) == (False, "chose read_file")


def test_contradicting_expectations_are_one_line() -> None:
    text = '[[case]]\nid = "c"\ntask = "t"\nexpect_tool = "a"\nexpect_no_tool = true\n'
    with pytest.raises(SuiteError, match="expect_no_tool contradicts expect_tool"):
        parse_suite(text, Path("s.wbsuite.toml"))
    with pytest.raises(SuiteError, match="expect_text must be a non-empty string"):
        parse_suite('[[case]]\nid = "c"\ntask = "t"\nexpect_text = ""\n', Path("s.toml"))
