"""Forks as a user makes them from the command line: scripts without call ids, the parent's
folder for new file-tool calls, and the demo's runs forked with no network."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.engine.engine_support import Project, cli, read_events
from traces.events import RunEnd, RunStart, ToolEnd
from traces.home import traces_dir
from workbench.engine.recording.fork.plan import ForkRequest, offline_fork_script, recorded_root
from workbench.engine.recording.fork.runner import ForkOptions, fork_choices
from workbench.engine.recording.running.service import ModelSettings, SetupError
from workbench.engine.recording.runs.load import Recording, read_recording_file

# Written like docs/script-format.md's example: no ids, so the script numbers them itself.
READ_THEN_ANSWER: list[dict[str, object]] = [
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "config.toml"}}]},
    {"content": "The port is 8080."},
]


def _new_run(home: Path, before: set[Path]) -> Recording:
    [path] = set(traces_dir(home).glob("*.jsonl")) - before
    return read_recording_file(path)


def _end(run: Recording) -> RunEnd:
    assert run.run_end is not None
    return run.run_end


def _tool_ends(run: Recording) -> list[ToolEnd]:
    return [event for event in run.events if isinstance(event, ToolEnd)]


def _script(project: Project, name: str, steps: list[dict[str, object]]) -> Path:
    path = project.home / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(steps), encoding="utf-8")
    return path


def _read_readme(answer: str) -> list[dict[str, object]]:
    return [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
        {"content": answer},
    ]


async def _record_with_cli(project: Project, steps: list[dict[str, object]]) -> str:
    script = _script(project, "parent.json", steps)
    code = await cli(
        "--home", str(project.home), "run", "What port does config.toml name?",
        "--script", str(script), "--root", str(project.root),
    )  # fmt: skip
    assert code == 0
    [path] = traces_dir(project.home).glob("*.jsonl")
    return path.stem


async def test_a_fork_script_without_ids_never_reuses_a_recorded_call_id(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = await _record_with_cli(project, READ_THEN_ANSWER)
    recorded_ids = {
        e["call_id"]
        for e in read_events(traces_dir(project.home) / f"{parent}.jsonl")
        if e["type"] == "tool_start"
    }
    assert recorded_ids == {"call_s1_0"}
    fix = _script(project, "fix.json", _read_readme("The port lives in config.toml."))
    before = set(traces_dir(project.home).glob("*.jsonl"))
    code = await cli(
        "--home", str(project.home), "fork", parent[:8], "--turn", "2",
        "--mock", "call_s1_0=port = 9090", "--script", str(fix), "--quiet",
    )  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "used twice" not in out.err + out.out
    [path] = set(traces_dir(project.home).glob("*.jsonl")) - before
    events = read_events(path)
    new_ids = [e["call_id"] for e in events if e["type"] == "tool_start"]
    assert len(new_ids) == 1 and new_ids[0] not in recorded_ids
    assert events[-1]["status"] == "completed"


async def test_new_file_calls_in_a_fork_read_the_parents_folder(
    project: Project, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    parent = await _record_with_cli(project, READ_THEN_ANSWER)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # no README.md here: only the recorded folder has it
    fix = _script(project, "fix.json", _read_readme("Read it."))
    before = set(traces_dir(project.home).glob("*.jsonl"))
    code = await cli(
        "--home", str(project.home), "fork", parent, "--turn", "2", "--script", str(fix),
        "--quiet",
    )  # fmt: skip
    assert code == 0
    fork = _new_run(project.home, before)
    [end] = _tool_ends(fork)
    assert end.ok and "The port lives in config.toml" in end.result
    assert fork.run_start.meta["root"] == str(project.root.resolve())
    assert recorded_root(fork.run_start) == project.root.resolve()


async def test_a_fork_whose_parent_folder_is_gone_says_so(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = await _record_with_cli(project, READ_THEN_ANSWER)
    moved = project.root.with_name("moved")
    project.root.rename(moved)
    fix = _script(project, "fix.json", [{"content": "ok"}])
    code = await cli(
        "--home", str(project.home), "fork", parent, "--turn", "2", "--script", str(fix),
        "--quiet",
    )  # fmt: skip
    assert code == 0
    assert "is gone" in capsys.readouterr().err


async def test_the_demo_forks_offline_with_its_own_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/unreachable")  # never used
    monkeypatch.chdir(tmp_path)  # not the demo project: forks must read the recorded folder
    assert await cli("--home", str(home), "demo", "--no-tui") == 0
    demo = [read_recording_file(p).run_start for p in traces_dir(home).glob("*.jsonl")]
    runs = {start.meta["demo"]: start for start in demo if "demo" in start.meta}
    recovered = runs["tool-error-recovered"]
    script = offline_fork_script(recovered)
    assert script is not None and script.parent == home.resolve()
    assert recorded_root(recovered) == (home / "demo-project").resolve()
    capsys.readouterr()

    before = set(traces_dir(home).glob("*.jsonl"))
    code = await cli(
        "--home", str(home), "fork", recovered.run_id, "--turn", "2",
        "--system", "Check paths with list_dir first.", "--quiet",
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    assert "offline model script" in err
    fork = _new_run(home, before)
    # The script reads src/units.py live from the demo's folder and answers from it.
    [end] = _tool_ends(fork)
    assert end.ok and "def fahrenheit_to_celsius" in end.result
    assert _end(fork).status == "completed"
    assert "fahrenheit_to_celsius" in (_end(fork).final_answer or "")

    # A failed run with a mocked result: the duplicate loop, forked at its repeat.
    loop = runs["duplicate-call-loop"]
    before = set(traces_dir(home).glob("*.jsonl"))
    code = await cli(
        "--home", str(home), "fork", loop.run_id, "--turn", "2",
        "--mock", "call_s1_0=src/report.py:7: # TODO: report the humidity range too",
        "--system", "Answer from the results you have.", "--quiet",
    )  # fmt: skip
    assert code == 0
    fork = _new_run(home, before)
    assert _end(fork).status == "completed" and "TODO" in (_end(fork).final_answer or "")

    # A mocked result alone: the demo's fork model answers by what the mock says.
    mock = "def f_to_c(value): in src/convert.py"
    before = set(traces_dir(home).glob("*.jsonl"))
    code = await cli(
        "--home", str(home), "fork", recovered.run_id, "--turn", "2",
        "--mock", f"call_s1_0={mock}", "--quiet",
    )  # fmt: skip
    assert code == 0
    mocked = _new_run(home, before)
    assert mock in (_end(mocked).final_answer or "")

    # The comparison shows the edits and the changed texts, not digests.
    capsys.readouterr()
    code = await cli("--home", str(home), "diff", loop.run_id, fork.run_id, "--chain")
    out = capsys.readouterr().out
    assert code == 1
    assert "system prompt: Answer from the results you have." in out
    assert "result of tool call call_s1_0 (mocked): src/report.py:7: # TODO" in out
    assert "turn 1, search_files result:" in out
    assert "# TODO: report the humidity range too [-src/sensors.py:14:" in out
    assert 'search_files({"query": "TODO"}) → not run' in out  # the refused repeat


def test_a_served_script_skips_ids_the_conversation_already_holds() -> None:
    from workbench.engine.http.model_server import ScriptResponder

    step = {"tool_calls": [{"name": "list_dir", "arguments": {}}, {"name": "list_dir"}]}
    history = [
        {"role": "user", "content": "look"},
        {"role": "assistant", "tool_calls": [{"id": "call_s1_1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "call_s1_1", "content": "a.txt"},
    ]
    responder = ScriptResponder([step, step])
    reply = responder({"messages": history, "stream": False})
    assert reply.body is not None
    ids = [call["id"] for call in reply.body["choices"][0]["message"]["tool_calls"]]
    assert ids == ["call_s2_0", "call_s2_1"]  # call 1's own ids would clash with call_s1_1
    fresh = responder({"messages": history[:1], "stream": False})
    assert fresh.body is not None
    assert [c["id"] for c in fresh.body["choices"][0]["message"]["tool_calls"]] == [
        "call_s2_0",
        "call_s2_1",
    ]


GOLDEN_RUN = Path(__file__).parents[1] / "fixtures/traces/v1/276a0272c8a551178d8bfedb26070002.jsonl"


def _start(meta: dict[str, object]) -> RunStart:
    line = GOLDEN_RUN.read_text(encoding="utf-8").splitlines()[0]
    start = RunStart.model_validate_json(line)
    return start.model_copy(update={"meta": meta})


def test_the_fork_model_and_folder_are_chosen_one_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `workbench fork`, the TUI's fork dialog and mcp-serve's fork_run all ask the runner.
    script = tmp_path / "fork.json"
    script.write_text("[]", encoding="utf-8")
    folder = tmp_path / "project"
    folder.mkdir()
    start = _start({"root": str(folder), "fork_script": str(script)})

    chosen = fork_choices(start, ForkOptions())
    assert chosen.root == folder.resolve() and chosen.limits == start.limits
    assert chosen.settings.script == script
    assert chosen.notes == [f"no model configured: using the run's offline model script {script}"]

    given = fork_choices(
        start, ForkOptions(ModelSettings(model="m", base_url="http://x"), tmp_path)
    )
    assert given.root == tmp_path.resolve() and given.settings.script is None
    assert given.notes == []
    assert fork_choices(start, ForkOptions(ModelSettings(script=tmp_path / "own.json"))).notes == []

    monkeypatch.chdir(tmp_path)
    gone = _start({"root": str(tmp_path / "gone")})
    moved = fork_choices(gone, ForkOptions())
    assert moved.root == tmp_path.resolve() and moved.settings == ModelSettings()
    assert moved.notes == [
        f"the parent run's folder {tmp_path / 'gone'} is gone; new file-tool calls read the "
        f"current folder {tmp_path.resolve()} (--root DIR chooses another)"
    ]
    with pytest.raises(SetupError, match="came from a bundle"):
        fork_choices(_start({"bundled": True}), ForkOptions())
    assert (
        fork_choices(_start({"bundled": True}), ForkOptions(root=folder)).root == folder.resolve()
    )


async def test_a_tui_fork_with_no_model_uses_the_demo_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.tui.backend import Backend, Endpoint

    home = tmp_path / "home"
    monkeypatch.chdir(tmp_path)  # not the demo project: forks must read the recorded folder
    assert await cli("--home", str(home), "demo", "--no-tui") == 0
    backend = Backend(home)
    backend.ingest()
    demo = [read_recording_file(p).run_start for p in traces_dir(home).glob("*.jsonl")]
    recovered = next(s for s in demo if s.meta.get("demo") == "tool-error-recovered")
    context = backend.fork_context(recovered.run_id, 2, Endpoint())
    assert context.fork_script == offline_fork_script(recovered) is not None
    assert backend.fork_context(recovered.run_id, 2, Endpoint(model="m")).fork_script is None

    request = ForkRequest(turn=2, system="Check paths with list_dir first.")
    items: list[object] = []
    outcome = await asyncio.to_thread(
        backend.run_fork, recovered.run_id, request, Endpoint(), items.append
    )
    backend.release()
    assert outcome.result.status == "completed"
    [end] = [item for item in items if isinstance(item, ToolEnd)]
    assert end.ok and "def fahrenheit_to_celsius" in end.result
