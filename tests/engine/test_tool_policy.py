"""The side-effect policy of a re-run: recorded | mock | live | deny per tool, its defaults,
where it is set (--tool-policy, <home>/tool-policy.toml, a suite), what the fork records,
and `fork --dry-run`, which prints the plan and writes nothing."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent_core.mcp_tools import read_only_hint
from agent_core.model.scripted import ScriptedModel
from tests.engine.engine_support import Project, cli, note_tools
from tests.engine.test_fork import FORK_CALLS, NOTE_RUN
from traces.events import RunStart, ToolEnd
from traces.home import open_run_trace
from workbench.engine.recording.fork.plan import ForkRequest, fork_agent, plan_fork
from workbench.engine.recording.fork.tool_policy import (
    PolicyError,
    ToolPolicy,
    call_outcome,
    parse_rule,
)
from workbench.engine.recording.runs.load import read_recording_file
from workbench.engine.regress.suite import SuiteError, parse_suite

NOTES_MODULE = """
from pathlib import Path
from pydantic import BaseModel
from agent_core.tools.registry import ToolRegistry

tools = ToolRegistry(source="user")

class NoteArgs(BaseModel):
    text: str

@tools.tool(NoteArgs, description="Save a note for later. Appends the text to notes.txt.")
def save_note(args: NoteArgs) -> str:
    with (Path(__file__).parent / "notes.txt").open("a", encoding="utf-8") as handle:
        handle.write(args.text + "\\n")
    return f"saved note ({len(args.text)} characters)"
"""


async def _fork_ends(path: Path, policy: ToolPolicy, root: Path) -> list[ToolEnd]:
    plan = plan_fork(read_recording_file(path), ForkRequest(turn=1, policy=policy))
    agent = fork_agent(plan, ScriptedModel(FORK_CALLS), live_toolsets=[note_tools(root)])
    return [e async for e in agent.run_stream() if isinstance(e, ToolEnd)]


async def test_a_write_is_refused_by_default_and_runs_when_the_policy_allows_it(
    project: Project,
) -> None:
    path, _ = await project.record(NOTE_RUN, task="Take notes")
    notes = project.root / "notes.txt"
    assert notes.read_text() == "first\n"

    # Default: save_note declares no read-only flag, so it is `recorded`: the repeat is
    # served from the trace, the new write is refused.
    repeat, new = await _fork_ends(path, ToolPolicy(), project.root)
    assert [call_outcome(repeat), call_outcome(new)] == ["recorded", "refused"]
    assert notes.read_text() == "first\n"

    # Allowed by policy: the new write runs, the repeat still does not fire twice.
    live = ToolPolicy.layered(cli=[parse_rule("save_*=live")])
    repeat, new = await _fork_ends(path, live, project.root)
    assert [call_outcome(repeat), call_outcome(new)] == ["recorded", "live"]
    assert notes.read_text() == "first\nsecond\n"

    denied = ToolPolicy.layered(cli=[parse_rule("save_note=deny")])
    ends = await _fork_ends(path, denied, project.root)
    assert [call_outcome(e) for e in ends] == ["denied", "denied"]
    assert "the tool policy denies save_note" in ends[0].result

    mocked = ToolPolicy.layered(cli=[parse_rule("save_note=mock:saved (mock)")])
    ends = await _fork_ends(path, mocked, project.root)
    assert [(call_outcome(e), e.result) for e in ends] == [("mocked", "saved (mock)")] * 2
    assert notes.read_text() == "first\nsecond\n"  # neither fork policy wrote anything


async def test_each_tool_policy_is_recorded_in_the_forks_run_start(project: Project) -> None:
    path, _ = await project.record(NOTE_RUN, task="Take notes")
    policy = ToolPolicy.layered(cli=[parse_rule("save_note=live")])
    plan = plan_fork(read_recording_file(path), ForkRequest(turn=1, policy=policy))
    agent = fork_agent(plan, ScriptedModel(FORK_CALLS), live_toolsets=[note_tools(project.root)])
    starts = [e async for e in agent.run_stream() if isinstance(e, RunStart)]
    recorded = starts[0].meta["tool_policy"]
    assert recorded["save_note"] == {"policy": "live", "why": "--tool-policy save_note=live"}
    assert recorded["read_file"] == {"policy": "live", "why": "read-only (default)"}


def test_rules_and_their_order() -> None:
    policy = ToolPolicy.layered(
        cli=[parse_rule("*=deny"), parse_rule("write_file=mock")],
        allow_side_effects=True,
        home=[parse_rule("read_*=recorded", "tool-policy.toml")],
    )
    assert policy.decide("write_file", read_only=False).policy == "mock"  # exact name first
    assert policy.decide("read_file", read_only=True).policy == "deny"  # CLI glob over home
    assert ToolPolicy.layered(allow_side_effects=True).decide("x", read_only=False).policy == "live"
    assert ToolPolicy().decide("x", read_only=True).policy == "live"
    assert ToolPolicy().decide("x", read_only=False).policy == "recorded"
    # A client's tool (a captured run) never runs here, whatever the rule says.
    assert policy.decide("x", read_only=False, client=True).policy != "live"
    for bad in ("write_file", "write_file=maybe", "=live", "x=live:text"):
        with pytest.raises(PolicyError):
            parse_rule(bad)


def test_mcp_hints_read_only_only_with_read_only_hint_and_not_destructive() -> None:
    assert read_only_hint({"readOnlyHint": True})
    assert not read_only_hint({})
    assert not read_only_hint({"readOnlyHint": "true"})
    assert not read_only_hint({"readOnlyHint": True, "destructiveHint": True})


def test_a_suite_sets_a_tool_policy_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    head = (
        '[suite]\nname = "s"\ntools = "builtin"\n'
        '[[case]]\nid = "a"\ntask = "t"\nexpect_tool = "read_file"\n'
    )
    suite = parse_suite(
        head + '[tool_policy]\nwrite_file = "deny"\n"mcp_*" = { policy = "mock", result = "ok" }\n',
        tmp_path / "s.wbsuite.toml",
    )
    decided = ToolPolicy.layered(suite=suite.tool_policy)
    assert decided.decide("write_file", read_only=False).policy == "deny"
    assert decided.decide("mcp_send", read_only=False).mock == "ok"
    with pytest.raises(SuiteError, match="unknown policy 'sometimes'"):
        parse_suite(head + '[tool_policy]\nx = "sometimes"\n', tmp_path / "s.wbsuite.toml")


def _home_state(home: Path) -> dict[str, tuple[str, int]]:
    return {
        str(p.relative_to(home)): (
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir",
            p.stat().st_mtime_ns,
        )
        for p in sorted(home.rglob("*"))
    }


@pytest.fixture
def notes_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    folder = tmp_path / "user_tools"
    folder.mkdir()
    name = f"policy_notes_{tmp_path.name.replace('-', '_')}"
    (folder / f"{name}.py").write_text(NOTES_MODULE, encoding="utf-8")
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    yield f"{name}:tools"
    sys.modules.pop(name, None)


async def test_dry_run_prints_the_plan_and_writes_nothing(
    project: Project, notes_module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, parent = await project.record(NOTE_RUN, task="Take notes")
    (project.home / "tool-policy.toml").write_text('save_note = "live"\n', encoding="utf-8")
    code = await cli("--home", str(project.home), "runs")  # the store exists, as it would
    assert code == 0
    capsys.readouterr()
    before = _home_state(project.home)
    script = tmp_path / "fork-model.json"
    script.write_text(json.dumps(FORK_CALLS), encoding="utf-8")
    common = [
        "--home", str(project.home), "fork", parent.run_id, "--turn", "2",
        "--tools", notes_module, "--root", str(project.root), "--script", str(script),
    ]  # fmt: skip

    assert await cli(*common, "--dry-run", "--json") == 0
    plan: dict[str, Any] = json.loads(capsys.readouterr().out)
    tools = {tool["name"]: tool for tool in plan["tools"]}
    assert plan["dry_run"] and plan["fork_turn"] == 2
    assert plan["prefix"] == [{"turn": 1, "model_calls": 1, "tool_calls": ["save_note"]}]
    assert tools["save_note"]["policy"] == "live" and tools["save_note"]["fires_live"]
    assert "tool-policy.toml" in tools["save_note"]["why"]
    assert tools["read_file"]["why"] == "read-only (default)"

    # --tool-policy comes before the home's file.
    assert await cli(*common, "--dry-run", "--tool-policy", "save_*=deny") == 0
    text = capsys.readouterr().out
    assert "served from the log, not run again: turn 1 (1 model call; save_note)" in text
    line = next(row for row in text.splitlines() if row.strip().startswith("save_note"))
    assert "deny" in line and "refused" in line and "--tool-policy save_*=deny" in line
    assert "tools that may fire live: " in text and "save_note" not in text.split("fire live")[1]

    assert _home_state(project.home) == before  # nothing written anywhere in the home
    assert (project.root / "notes.txt").read_text() == "first\n"
    assert not (Path.cwd() / "notes.txt").exists()  # the user module's tool never ran


async def test_fork_cli_refuses_a_write_by_default_and_runs_it_with_tool_policy(
    project: Project, notes_module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = Path.cwd() / "notes.txt"  # where the user module writes
    module = notes_module.split(":")[0]
    tools = __import__(module).tools
    _, parent = await project.record(NOTE_RUN, task="Take notes", toolsets=[tools])
    assert notes.read_text() == "first\n"
    script = tmp_path / "fork-model.json"
    script.write_text(json.dumps(FORK_CALLS), encoding="utf-8")
    common = [
        "--home", str(project.home), "fork", parent.run_id, "--turn", "1",
        "--tools", notes_module, "--script", str(script), "--quiet",
    ]  # fmt: skip
    assert await cli(*common) == 0
    err = capsys.readouterr().err
    assert "refused by the tool policy: save_note; --tool-policy save_note=live" in err
    assert notes.read_text() == "first\n"

    assert await cli(*common, "--tool-policy", "save_note=live") == 0
    assert notes.read_text() == "first\nsecond\n"
    assert await cli(*common, "--tool-policy", "save_note=sometimes") == 2
    assert "unknown policy 'sometimes'" in capsys.readouterr().err


async def test_show_and_diff_say_each_calls_policy_and_outcome(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    path, parent = await project.record(NOTE_RUN, task="Take notes")
    plan = plan_fork(
        read_recording_file(path),
        ForkRequest(turn=1, policy=ToolPolicy.layered(cli=[parse_rule("save_note=live")])),
    )
    run_id = "f0" * 16
    writer = open_run_trace(project.home, run_id)
    agent = fork_agent(
        plan, ScriptedModel(FORK_CALLS), live_toolsets=[], sinks=[writer], run_id=run_id
    )
    await agent.run()
    writer.close()
    assert await cli("--home", str(project.home), "show", run_id) == 0
    out = capsys.readouterr().out
    assert "tool policy: calculator=live, list_dir=live, read_file=live" in out
    assert "save_note=live" in out
    # The repeat was served from the recording; the new note had no live tool here.
    assert "policy live → recorded" in out and "policy live → failed" in out
    assert await cli("--home", str(project.home), "show", run_id, "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    outcomes = [c["outcome"] for t in shown["chain"]["turns"] for c in t["tool_calls"]]
    assert outcomes == ["recorded", "failed"]
    assert await cli("--home", str(project.home), "diff", parent.run_id, run_id, "--chain") == 1
    assert "[policy live → recorded]" in capsys.readouterr().out


async def test_regression_samples_follow_the_policy(project: Project) -> None:
    from workbench.engine.regress.guard import GuardedToolset

    notes = project.root / "notes.txt"
    tools = note_tools(project.root)
    default = GuardedToolset(tools)
    refused = await default.call("save_note", {"text": "x"}, "c1")
    assert call_outcome(_end(refused)) == "refused" and not notes.exists()
    live = GuardedToolset(tools, policy=ToolPolicy.layered(suite=[parse_rule("save_note=live")]))
    assert live.policy_record["save_note"]["policy"] == "live"
    assert call_outcome(_end(await live.call("save_note", {"text": "x"}, "c2"))) == "live"
    assert notes.read_text() == "x\n"
    mocked = GuardedToolset(tools, policy=ToolPolicy.layered(cli=[parse_rule("*=mock:ok")]))
    assert (await mocked.call("save_note", {"text": "y"}, "c3")).text == "ok"
    assert notes.read_text() == "x\n"


def _end(result: Any) -> ToolEnd:
    return ToolEnd(
        run_id="r", seq=0, ts=datetime.now(UTC), turn=1, call_id="c", name="t", ok=result.ok,
        result=result.text,
        error=result.error, mocked=result.mocked, replayed=result.replayed,
    )  # fmt: skip


def test_test_command_rejects_a_bad_tool_policy_in_one_line(tmp_path: Path) -> None:
    suite = tmp_path / "s.wbsuite.toml"
    suite.write_text(
        '[suite]\nname = "s"\ntools = "builtin"\n'
        '[[case]]\nid = "a"\ntask = "t"\nexpect_tool = "read_file"\n',
        encoding="utf-8",
    )
    import contextlib
    import io

    from workbench.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["--home", str(tmp_path / "h"), "test", str(suite), "--tool-policy", "x=y"])
    assert code == 2 and "unknown policy 'y'" in err.getvalue()
    assert err.getvalue().count("\n") == 1
