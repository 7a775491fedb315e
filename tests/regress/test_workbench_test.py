"""`workbench test` end to end: a real subprocess, the real openai SDK, a real local model
server whose answers come from reading the tool descriptions, and a real DuckDB store."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from workbench.engine.http.model_server import ModelServer, Reply, ScriptResponder

CLI = "import sys; from workbench.cli import main; sys.exit(main())"

SUITE = """
[suite]
name = "file-tools"
samples = 2
tools = "builtin"

[[case]]
id = "read-notes"
task = "What does notes.txt say? Read the file and tell me."
expect_tool = "read_file"
expect_args = { path = "notes.txt" }

[[case]]
id = "list-docs"
task = "List the files in the docs folder."
expect_tool = "list_dir"

[[case]]
id = "arithmetic"
task = "Evaluate the arithmetic expression 17 * 4 + 2"
expect_tool = "calculator"
expect_not_tool = "read_file"
"""

MISLEADING = "Evaluate arithmetic expressions exactly. Do not use it for a file."


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """The file-tools suite (SUITE) as a file."""
    path = tmp_path / "file-tools.wbsuite.toml"
    path.write_text(SUITE, encoding="utf-8")
    return path


def workbench(
    *args: str, server: ModelServer, home: Path, root: Path
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", CLI, "test", "--home", str(home), "--root", str(root)]
    command += ["--base-url", server.base_url, "--model", "chooser", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_baseline_then_a_misleading_edit_fails_with_the_description_diff(
    tmp_path: Path, suite: Path, chooser_server: ModelServer, project: Path
) -> None:
    home = tmp_path / "home"

    passing = workbench(
        str(suite), "--save-baseline", "main", server=chooser_server, home=home, root=project
    )
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "3 passed of 3 case(s), 6 sample(s)" in passing.stdout
    assert "saved baseline 'main'" in passing.stdout
    assert "read_file ×2" in passing.stdout
    # The CLI's one progress bar is for a terminal: stderr here is a pipe, as in CI.
    assert passing.stderr == ""
    traces = sorted((home / "traces").glob("*.jsonl"))
    assert len(traces) == 6  # every sample is a recorded run

    failing = workbench(
        str(suite),
        "--baseline",
        "main",
        "--tool-description",
        f"read_file={MISLEADING}",
        "--junit",
        str(tmp_path / "junit.xml"),
        server=chooser_server,
        home=home,
        root=project,
    )
    assert failing.returncode == 1, failing.stdout + failing.stderr
    out = failing.stdout
    assert "FAIL" in out and "read-notes" in out and "chose list_dir" in out
    assert "(was 100%)" in out and "chose read_file" in out
    # The description diff of the edited tool, against the baseline's schemas.
    assert "since baseline 'main'" in out
    assert "~ tool read_file" in out and "{+Evaluate arithmetic expressions exactly.+}" in out
    assert "~ tool list_dir" not in out
    assert "Traceback" not in failing.stderr

    junit = ET.parse(tmp_path / "junit.xml").getroot()
    assert junit.tag == "testsuite" and junit.get("tests") == "3"
    assert junit.get("failures") == "2"  # the misleading text also lures the arithmetic case
    cases = {c.get("name"): c for c in junit.iter("testcase")}
    failure = cases["read-notes"].find("failure")
    assert failure is not None
    assert cases["arithmetic"].find("failure") is not None
    assert cases["list-docs"].find("failure") is None
    assert "read_file" in (failure.text or "")


def test_json_output_and_samples_override(
    tmp_path: Path, suite: Path, chooser_server: ModelServer, project: Path
) -> None:
    result = workbench(
        str(suite),
        "--json",
        "--samples",
        "3",
        "--concurrency",
        "3",
        server=chooser_server,
        home=tmp_path / "home",
        root=project,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["exit_code"] == 0 and len(report["cases"]) == 3
    first = report["cases"][0]
    assert first["case_id"] == "read-notes" and first["pass_rate"] == 1.0
    assert [s["chosen"] for s in first["samples"]] == ["read_file"] * 3
    run_ids = {s["run_id"] for c in report["cases"] for s in c["samples"]}
    assert all((tmp_path / "home" / "traces" / f"{r}.jsonl").is_file() for r in run_ids)
    # A sample runs the read-only read_file for real (it changes nothing).
    trace = tmp_path / "home" / "traces" / f"{first['samples'][0]['run_id']}.jsonl"
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    [end] = [e for e in events if e["type"] == "tool_end"]
    assert end["name"] == "read_file" and end["ok"] and "buy milk" in end["result"]


def test_a_bad_suite_exits_2_with_one_line(
    tmp_path: Path, chooser_server: ModelServer, project: Path
) -> None:
    suite = tmp_path / "bad.wbsuite.toml"
    suite.write_text("[[case]]\nid = 'x'\ntask = 'hi'\n", encoding="utf-8")
    result = workbench(str(suite), server=chooser_server, home=tmp_path / "h", root=project)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "no expectation" in result.stderr
    missing = workbench(
        str(tmp_path / "nope.toml"), server=chooser_server, home=tmp_path / "h", root=project
    )
    assert missing.returncode == 2 and "cannot read suite" in missing.stderr


def test_unknown_baseline_or_tool_exits_2(
    tmp_path: Path, suite: Path, chooser_server: ModelServer, project: Path
) -> None:
    home = tmp_path / "home"
    no_baseline = workbench(
        str(suite), "--baseline", "nope", server=chooser_server, home=home, root=project
    )
    assert no_baseline.returncode == 2
    assert "no baseline 'nope'" in no_baseline.stderr and no_baseline.stderr.count("\n") == 1
    bad_tool = workbench(
        str(suite), "--tool-description", "nope=x", server=chooser_server, home=home, root=project
    )
    assert bad_tool.returncode == 2 and "unknown tool 'nope'" in bad_tool.stderr


def test_an_unreachable_model_exits_2(tmp_path: Path, suite: Path, project: Path) -> None:
    with ModelServer(lambda body: None) as server:  # type: ignore[arg-type, return-value]
        url = server.base_url
    command = [sys.executable, "-c", CLI, "test", str(suite), "--home", str(tmp_path / "h")]
    command += ["--root", str(project), "--base-url", url, "--model", "m", "--samples", "1"]
    command += ["--model-timeout", "2"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    (last,) = result.stderr.strip().splitlines()  # one line, no progress off a terminal
    assert last.startswith("workbench: suite file-tools could not run: every sample failed")
    assert "Traceback" not in result.stderr


def test_a_model_that_does_not_answer_in_time_is_an_error_not_a_choice(
    tmp_path: Path, suite: Path, project: Path
) -> None:
    # However slow the machine, a sample whose model call failed (here: the model's
    # timeout, as a retried connection error ends when it is slow) judges no tool choice.
    silent = Reply(chunks=[], stall_after=0)
    with ModelServer(lambda body: silent) as server:
        options = ["--samples", "1", "--model-timeout", "1"]
        result = workbench(str(suite), *options, server=server, home=tmp_path / "h", root=project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "chose no tool" not in result.stdout
    assert "Traceback" not in result.stderr


def test_progress_off_a_terminal_is_printed_when_asked(
    tmp_path: Path, suite: Path, chooser_server: ModelServer, project: Path
) -> None:
    home = tmp_path / "home"
    for asked in (["--progress"], []):
        result = workbench(str(suite), *asked, server=chooser_server, home=home, root=project)
        assert result.returncode == 0, result.stdout + result.stderr
        progress = [line for line in result.stderr.splitlines() if "% " in line]
        # A line at each tenth, the last one at 100%; none at all when not asked.
        assert progress[-1:] == (["workbench: 100% 6/6 samples, 0 failed"] if asked else [])


def test_sample_traces_get_the_homes_redaction(
    tmp_path: Path, suite: Path, chooser_server: ModelServer, project: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "redact-patterns.txt").write_text("notes\\.txt\n", encoding="utf-8")
    api_key = "sk-regress-0123456789abcdef"

    result = workbench(
        str(suite), "--api-key", api_key, server=chooser_server, home=home, root=project
    )
    assert result.returncode == 0, result.stdout + result.stderr
    texts = [path.read_text() for path in (home / "traces").glob("*.jsonl")]
    assert len(texts) == 6
    assert not any("notes.txt" in text or api_key in text for text in texts)
    assert any("[REDACTED:pattern-1]" in text for text in texts)


def offered_tools(home: Path) -> set[tuple[str, ...]]:
    """The tool names each recorded sample offered."""
    offered = set()
    for path in (home / "traces").glob("*.jsonl"):
        start = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        offered.add(tuple(tool["function"]["name"] for tool in start["tools"]))
    return offered


def test_builtin_tools_from_the_suite_file_or_the_command_line(
    tmp_path: Path, chooser_server: ModelServer, project: Path
) -> None:
    suite = tmp_path / "s.wbsuite.toml"
    head = '[suite]\nname = "chosen"\ntools = "builtin"\nbuiltin_tools = ["list_dir"]\n'
    case = '[[case]]\nid = "list-docs"\ntask = "List the files in the docs folder."\n'
    suite.write_text(head + case + 'expect_tool = "list_dir"\n', encoding="utf-8")
    home = tmp_path / "home"
    result = workbench(str(suite), server=chooser_server, home=home, root=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert offered_tools(home) == {("list_dir",)}

    # The command line wins over the file.
    home = tmp_path / "home2"
    flags = ["--builtin-tools", "list_dir,calculator"]
    result = workbench(str(suite), *flags, server=chooser_server, home=home, root=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert offered_tools(home) == {("list_dir", "calculator")}

    result = workbench(
        str(suite), "--builtin-tools", "cat", server=chooser_server, home=home, root=project
    )
    assert result.returncode == 2
    assert "builtin_tools: no built-in tool named cat (built-ins: " in result.stderr


def test_expect_args_judges_the_arguments_the_agent_repaired_and_ran(
    tmp_path: Path, project: Path
) -> None:
    """A trailing comma is repaired by the loop, which then runs the tool; the judge reads
    the same arguments, not "not valid JSON"."""
    (project / "README.md").write_text("# hello\n", encoding="utf-8")
    suite = tmp_path / "readme.wbsuite.toml"
    suite.write_text(
        '[suite]\nname = "readme"\nsamples = 1\ntools = "builtin"\n\n'
        '[[case]]\nid = "read-readme"\ntask = "Read README.md."\n'
        'expect_tool = "read_file"\nexpect_args = { path = "README.md" }\n',
        encoding="utf-8",
    )
    broken = {"tool_calls": [{"name": "read_file", "arguments": '{"path": "README.md",}'}]}
    steps: list[dict[str, Any]] = [broken, {"content": "It says hello."}]
    with ModelServer(ScriptResponder(steps), model="chooser") as server:
        result = workbench(
            str(suite), "--json", server=server, home=tmp_path / "home", root=project
        )
    assert result.returncode == 0, result.stdout + result.stderr
    [case] = json.loads(result.stdout)["cases"]
    assert case["pass_rate"] == 1.0, case
    [sample] = case["samples"]
    trace = tmp_path / "home" / "traces" / f"{sample['run_id']}.jsonl"
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    [start] = [e for e in events if e["type"] == "tool_start"]
    assert start["arguments"] == {"path": "README.md"} and start["parse_error"] is None
