"""`workbench import claude-code|codex` on the golden session files (tests/fixtures/sessions:
written by Claude Code 2.1.332 and Codex 0.171.0 run headless against a scripted upstream,
then redacted; README.md there says how), through the CLI: the runs, their tool calls and
results, their usage; a second import writes nothing; unknown record types are kept and
counted; bad lines are one problem line each and the rest still goes in; the runs open in
show, search, diff, the TUI and a regression case."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from tests.engine.capture_support import runs
from tests.engine.engine_support import cli
from tests.tui.conftest import plain, run_shown, settle
from workbench.cli import main
from workbench.engine.sessions.session import SESSION_LINE_CAP
from workbench.tui import WorkbenchApp
from workbench.tui.paged_list import PagedList
from workbench.tui.run_screen import RunScreen

SESSIONS = Path(__file__).parents[1] / "fixtures" / "sessions"
CLAUDE = SESSIONS / "claude-code"
CLAUDE_SESSION = "4d8b3f6d-2451-4423-a79b-be9926367ede"
CLAUDE_RUN = "4d8b3f6d24514423a79bbe9926367ede"
CODEX = SESSIONS / "codex"
CODEX_RUN = "01a2342d99bf7c10889ccb0b48270501"
TASK = "What do the notes in notes.txt say?"
WORKBENCH = str(Path(sys.executable).with_name("workbench"))


def workbench(capsys: pytest.CaptureFixture[str], home: Path, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--home", str(home)])
    out, err = capsys.readouterr()
    return code, out, err


def by_run(home: Path) -> dict[str, list[dict[str, Any]]]:
    return {events[0]["run_id"]: events for events in runs(home)}


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def calls(events: list[dict[str, Any]]) -> list[tuple[int, str, Any, bool, str]]:
    ends = {e["call_id"]: e for e in of_type(events, "tool_end")}
    return [
        (
            s["turn"],
            s["name"],
            s["arguments"],
            ends[s["call_id"]]["ok"],
            ends[s["call_id"]]["result"],
        )
        for s in of_type(events, "tool_start")
    ]


def test_a_claude_code_transcript_and_its_sub_agent_import_as_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    code, out, err = workbench(capsys, home, "import", "claude-code", str(CLAUDE))
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "2 run(s) imported, 0 already there, from 1 file(s)"
    found = by_run(home)
    main_run = found.pop(CLAUDE_RUN)
    [sub_run] = found.values()

    start, end = main_run[0], main_run[-1]
    assert (start["origin"], start["client"], start["task"]) == (
        "imported", "claude-code 2.1.332", TASK
    )  # fmt: skip
    assert start["model"] == "claude-sonnet-4-5"
    assert start["system_prompt"].startswith("You are a Claude agent")
    assert {"Read", "Bash", "Agent"} <= {t["function"]["name"] for t in start["tools"]}
    assert start["meta"]["session"]["session_id"] == CLAUDE_SESSION
    assert start["meta"]["session"]["records"]["attachment"] == 15
    assert (end["status"], end["final_answer"]) == (
        "completed", "The notes say the release is on Friday (one line)."
    )  # fmt: skip
    assert (end["totals"]["turns"], end["totals"]["tool_calls"]) == (4, 3)
    [(_, read, read_args, read_ok, read_result), agent, bash] = calls(main_run)
    assert (read, read_args, read_ok) == (
        "Read",
        {"file_path": "/home/user/project/notes.txt"},
        True,
    )
    assert "The release is on Friday." in read_result
    assert (agent[:2], bash[:2], bash[4]) == ((2, "Agent"), (3, "Bash"), "1 notes.txt")
    requests = of_type(main_run, "model_request")
    assert [r["api"] for r in requests] == ["anthropic"] * 4
    # Each request holds the conversation before it, complete: system, user, answers, results.
    assert [m["role"] for m in requests[1]["messages"]] == ["system", "user", "assistant", "tool"]
    usage = of_type(main_run, "model_response")[0]["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (120, 12)

    assert sub_run[0]["parent_run_id"] == CLAUDE_RUN
    assert sub_run[0]["task"] == "Count the lines of notes.txt"
    assert sub_run[0]["meta"]["session"]["agent"]["toolUseId"] == "toolu_agent"
    # One session (issue 39, part 6): the transcript's, its sub-agent's run part of it.
    assert start["meta"]["session_id"] == sub_run[0]["meta"]["session_id"] == CLAUDE_SESSION
    code, out, err = workbench(capsys, home, "sessions", "--json")
    [session] = json.loads(out)
    assert (session["session"], session["runs"]) == (CLAUDE_SESSION, 2)
    assert sub_run[-1]["final_answer"] == "notes.txt has 1 line."

    # Again: nothing new.
    code, out, _ = workbench(capsys, home, "import", "claude-code", str(CLAUDE))
    assert code == 0 and out.splitlines()[-1].startswith("0 run(s) imported, 2 already there")
    assert len(runs(home)) == 2


def test_a_codex_rollout_imports_as_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    code, out, err = workbench(capsys, home, "import", "codex", str(CODEX))
    assert (code, err) == (0, "")
    assert f"imported run {CODEX_RUN[:12]} (completed, 2 turn(s))" in out
    [run] = runs(home)
    start, end = run[0], run[-1]
    assert (start["origin"], start["client"], start["task"], start["model"]) == (
        "imported", "codex_exec 0.171.0", TASK, "gpt-5.5"
    )  # fmt: skip
    assert start["system_prompt"].startswith("You are Codex, a coding agent")
    assert start["meta"]["session"]["cwd"] == "/home/user/project"
    assert start["meta"]["session_id"] == "01a2342d-99bf-7c10-889c-cb0b48270501"
    [(turn, name, arguments, ok, result)] = calls(run)
    assert (turn, name, arguments, ok) == (1, "exec_command", {"cmd": "cat notes.txt"}, True)
    assert "Output:\nThe release is on Friday." in result
    assert [r["api"] for r in of_type(run, "model_request")] == ["responses"] * 2
    usage = of_type(run, "model_response")[0]["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (2400, 30)
    assert (end["status"], end["final_answer"]) == (
        "completed", "The notes say the release is on Friday."
    )  # fmt: skip


UNKNOWN = {"type": "future-record", "payload": {"what": "a type no reader knows"}}


@pytest.mark.parametrize("kind", ["claude-code", "codex"])
def test_unknown_records_are_kept_and_bad_lines_are_one_line_each(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "sessions"
    shutil.copytree(CLAUDE if kind == "claude-code" else CODEX, source)
    [session] = (
        [source / "-home-user-project" / f"{CLAUDE_SESSION}.jsonl"]
        if kind == "claude-code"
        else list(source.rglob("rollout-*.jsonl"))
    )
    lines = session.read_text(encoding="utf-8").splitlines()
    lines[3:3] = ['{"type": "user", "message": ', json.dumps(UNKNOWN), "[1, 2]"]
    session.write_text("\n".join(lines) + "\n", encoding="utf-8")

    home = tmp_path / "home"
    code, out, err = workbench(capsys, home, "import", kind, str(source))
    assert code == 0
    assert err.splitlines() == [
        f"workbench import: {session}:4: not a JSON line (Expecting value); line skipped",
        f"workbench import: {session}:6: not a JSON object; line skipped",
    ]
    assert "kept records of unknown types: future-record ×1" in out
    assert "2 problem(s) on stderr" in out.splitlines()[-1]
    run = by_run(home)[CLAUDE_RUN if kind == "claude-code" else CODEX_RUN]
    session_meta = run[0]["meta"]["session"]
    assert session_meta["unknown_types"] == {"future-record": 1}
    assert session_meta["unknown_records"] == [UNKNOWN]
    assert run[-1]["status"] == "completed"  # the rest of the file still went in


def test_what_cannot_be_imported_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    code, _, err = workbench(capsys, home, "import", "codex", str(tmp_path / "nowhere"))
    assert code == 2 and err.count("\n") == 1 and "no such file or folder" in err
    (tmp_path / "empty").mkdir()
    code, _, err = workbench(capsys, home, "import", "claude-code", str(tmp_path / "empty"))
    assert code == 2 and "no Claude Code transcripts" in err and err.count("\n") == 1
    prompt_only = tmp_path / "p" / "s.jsonl"
    prompt_only.parent.mkdir()
    prompt_only.write_text(json.dumps({"type": "user", "message": {"content": "hi"}}) + "\n")
    code, out, err = workbench(capsys, home, "import", "claude-code", str(prompt_only))
    assert code == 0 and err == f"workbench import: {prompt_only}: no answer of the model; no run\n"
    assert out.startswith("0 run(s) imported") and not list(home.glob("traces/*.jsonl"))


async def test_imported_sessions_show_search_diff_and_make_a_regression_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    assert await cli("import", "claude-code", str(CLAUDE), "--home", str(home)) == 0
    assert await cli("import", "codex", str(CODEX), "--home", str(home)) == 0
    capsys.readouterr()
    assert await cli("show", CLAUDE_RUN[:8], "--home", str(home)) == 0
    shown = capsys.readouterr().out
    assert "origin: imported by claude-code 2.1.332" in shown
    assert "tool Bash [ok" in shown and "client, observed" in shown
    assert await cli("search", "release is on Friday", "--home", str(home), "--json") == 0
    found = {hit["run_id"] for hit in json.loads(capsys.readouterr().out)}
    assert {CLAUDE_RUN, CODEX_RUN} <= found
    assert await cli("diff", CLAUDE_RUN[:8], CODEX_RUN[:8], "--home", str(home)) in (0, 1)
    assert "first divergence at turn 1" in capsys.readouterr().out

    # A regression case from the imported Codex run's first turn, answered by a script.
    suite = tmp_path / "codex.wbsuite.toml"
    assert await cli(
        "capture-case", CODEX_RUN[:8], "--turn", "1", "--suite", str(suite), "--home", str(home)
    ) == 0  # fmt: skip
    model = tmp_path / "model.json"
    step = {"tool_calls": [{"name": "exec_command", "arguments": {"cmd": "cat notes.txt"}}]}
    model.write_text(json.dumps({"steps": [step] * 3}))
    assert await cli("test", str(suite), "--script", str(model), "--home", str(home)) == 0
    sample = next(e for e in runs(home) if e[0]["meta"].get("regress"))
    request = of_type(sample, "model_request")[0]
    assert request["messages"][-1] == {"role": "user", "content": TASK}


async def test_an_imported_session_opens_in_the_tui(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    assert main(["--home", str(home), "import", "codex", str(CODEX)]) == 0
    app = WorkbenchApp(home)
    async with app.run_test(size=(160, 45)) as pilot:
        listed = app.screen.query_one("#runs-list", PagedList)
        await settle(pilot, lambda: listed.total == 1 and listed.row(0) is not None)
        await pilot.press("enter")
        await run_shown(pilot)
        assert isinstance(app.screen, RunScreen)
        summary = plain(app.screen.query_one("#run-summary", Static))
        assert TASK in summary and "2 turns" in summary and "1 tool call" in summary


def test_only_regular_files_are_read_and_a_line_over_the_cap_is_one_problem(
    tmp_path: Path,
) -> None:
    """A rollout that is a symlink to /dev/zero or a FIFO is skipped with a note (it once
    filled memory or hung the import for ever); a line longer than the cap is a problem line
    and the lines after it still go in. Run as a subprocess so a hang fails, not blocks."""
    source = tmp_path / "sessions"
    shutil.copytree(CODEX, source)
    [rollout] = list(source.rglob("rollout-*.jsonl"))
    lines = rollout.read_bytes().splitlines(keepends=True)
    with rollout.open("wb") as out:
        out.writelines(lines[:3])
        # A hole in the file: a line of NUL bytes just over the cap, costing no disk.
        out.seek(SESSION_LINE_CAP + 1, 1)
        out.write(b"\n")
        out.writelines(lines[3:])
    zero = rollout.with_name("rollout-zero.jsonl")
    zero.symlink_to("/dev/zero")
    fifo = rollout.with_name("rollout-fifo.jsonl")
    os.mkfifo(fifo)

    home = tmp_path / "home"
    done = subprocess.run(
        [WORKBENCH, "import", "codex", str(source), "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(done.stderr.splitlines()) == sorted(
        [
            f"workbench import: cannot read {fifo}: not a regular file (a FIFO, device or socket); "
            "skipped",
            f"workbench import: {rollout}:4: longer than {SESSION_LINE_CAP // (1024 * 1024)} MB; "
            "line skipped",
            f"workbench import: cannot read {zero}: not a regular file (a FIFO, device or socket); "
            "skipped",
        ]
    )
    assert by_run(home)[CODEX_RUN][-1]["status"] == "completed"  # the rest still went in
