"""`workbench run` and `workbench demo` from the command line: scripted models, a real local
OpenAI-compatible server through the real SDK, exit codes, Ctrl-C, and secrets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_core.demo import SCENARIOS
from tests.support.servers import Sequence
from traces.events import Error, Event, RunEnd, RunStart
from traces.reader import read_trace
from workbench.cli import main
from workbench.engine.http.model_server import ModelServer, Reply, ScriptResponder

SECRET = "sk-test-0123456789abcdefSECRET"
NO_RETRY = {"x-should-retry": "false"}
ENV_VARS = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "WORKBENCH_MODEL", "WORKBENCH_HOME")


@pytest.fixture(autouse=True)
def no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def write_script(folder: Path, steps: list[dict[str, Any]]) -> Path:
    path = folder / "script.json"
    path.write_text(json.dumps({"steps": steps}), encoding="utf-8")
    return path


def traces(home: Path) -> list[Path]:
    return sorted((home / "traces").glob("*.jsonl"))


def run_end(path: Path) -> RunEnd:
    last = read_trace(path).events[-1]
    assert isinstance(last, RunEnd)
    return last


def read_step(path: str = "README.md") -> dict[str, Any]:
    return {
        "content": "Reading.",
        "tool_calls": [{"name": "read_file", "arguments": {"path": path}}],
    }


def scripted_run(task: str, script: Path, project: Path, home: Path, *extra: str) -> list[str]:
    """`workbench run TASK` against a scripted model, its tools confined to `project`."""
    args = ["run", task, "--script", str(script), "--root", str(project), "--home", str(home)]
    return [*args, *extra]


def test_run_with_a_script_completes(tmp_path: Path, project: Path, capsys) -> None:
    script = write_script(tmp_path, [read_step(), {"content": "A tiny demo project."}])
    home = tmp_path / "home"
    code = main(scripted_run("What is this?", script, project, home))
    out = capsys.readouterr().out
    assert code == 0
    assert "Reading." in out and "A tiny demo project." in out
    assert "  → read_file" in out and "  ← read_file ok" in out
    (trace,) = traces(home)
    assert f"run {trace.stem}: completed" in out
    assert run_end(trace).status == "completed"


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("required", "required"),
        ("read_file", {"type": "function", "function": {"name": "read_file"}}),
    ],
)
def test_tool_choice_forces_calls_until_one_is_made(
    tmp_path: Path, project: Path, choice: str, sent: Any
) -> None:
    steps = [read_step(), read_step("src/main.py"), {"content": "Done."}]
    script = write_script(tmp_path, steps)
    home = tmp_path / "home"
    args = scripted_run("task", script, project, home)
    assert main([*args, "--tool-choice", choice]) == 0
    (trace,) = traces(home)
    events = read_trace(trace).events
    assert events[0].params == {"tool_choice": sent}  # type: ignore[union-attr]
    params = [e.params for e in events if e.type == "model_request"]  # type: ignore[union-attr]
    # Sent again after a call, a forcing choice would never let the model answer.
    assert params == [{"tool_choice": sent}, {}, {}]


def test_tool_choice_auto_is_sent_on_every_turn(tmp_path: Path, project: Path) -> None:
    script = write_script(tmp_path, [read_step(), {"content": "Done."}])
    home = tmp_path / "home"
    args = scripted_run("task", script, project, home)
    assert main([*args, "--tool-choice", "auto"]) == 0
    events = read_trace(traces(home)[0]).events
    params = [e.params for e in events if e.type == "model_request"]  # type: ignore[union-attr]
    assert params == [{"tool_choice": "auto"}] * 2


def test_tool_choice_of_an_unknown_tool_is_a_usage_error(
    tmp_path: Path, project: Path, capsys
) -> None:
    script = write_script(tmp_path, [{"content": "x"}])
    args = ["run", "task", "--script", str(script), "--root", str(project)]
    assert main([*args, "--home", str(tmp_path / "h"), "--tool-choice", "read_fiel"]) == 2
    err = capsys.readouterr().err
    assert "--tool-choice: no tool named read_fiel (tools: " in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("steps", "flags", "status", "code"),
    [
        (
            [read_step("README.md"), read_step("src/main.py"), read_step()],
            ["--max-turns", "2"],
            "max_turns",
            1,
        ),
        ([read_step(), read_step(), {"content": "x"}], [], "duplicate_tool_calls", 1),
        ([{"content": "x"}], ["--token-budget", "10"], "token_budget", 1),
        ([{"delay_ms": 20000, "content": "x"}], ["--model-timeout", "0.2"], "timeout", 1),
        ([{"error": {"status": 404, "message": "no such model"}}], [], "error", 3),
    ],
)
def test_each_end_condition_from_the_command_line(
    tmp_path: Path,
    project: Path,
    capsys,
    steps: list[dict[str, Any]],
    flags: list[str],
    status: str,
    code: int,
) -> None:
    script = write_script(tmp_path, steps)
    home = tmp_path / "home"
    args = scripted_run("task", script, project, home)
    assert main([*args, *flags]) == code
    (trace,) = traces(home)
    assert run_end(trace).status == status
    assert f": {status}" in capsys.readouterr().out


def test_json_result(tmp_path: Path, project: Path, capsys) -> None:
    script = write_script(tmp_path, [{"content": "hello"}])
    home = tmp_path / "home"
    assert main(scripted_run("hi", script, project, home, "--json")) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "completed" and result["final_answer"] == "hello"
    assert Path(result["trace"]).exists()


def test_no_model_configured_is_one_clear_line(tmp_path: Path, capsys) -> None:
    assert main(["run", "hi", "--home", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--base-url" in err and "OPENAI_BASE_URL" in err
    assert not (tmp_path / "traces").exists()


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("calculater=Do maths", "no tool named calculater"),
        ("calculator", "expected NAME=TEXT"),
        ("calculator=@/no/such/file", "cannot read"),
    ],
)
def test_bad_tool_description_flags(
    tmp_path: Path, project: Path, capsys, flag: str, message: str
) -> None:
    script = write_script(tmp_path, [{"content": "x"}])
    code = main(scripted_run("hi", script, project, tmp_path, "--tool-description", flag))
    assert code == 2
    assert message in capsys.readouterr().err


def test_tool_description_from_file_is_recorded(tmp_path: Path, project: Path) -> None:
    script = write_script(tmp_path, [{"content": "x"}])
    (tmp_path / "desc.txt").write_text("Evaluate sums.\n")
    home = tmp_path / "home"
    description = f"calculator=@{tmp_path / 'desc.txt'}"
    system = ["--system", "Be terse."]
    main(scripted_run("hi", script, project, home, "--tool-description", description, *system))
    start = read_trace(traces(home)[0]).events[0]
    assert isinstance(start, RunStart)
    descriptions = {t["function"]["name"]: t["function"]["description"] for t in start.tools}
    assert descriptions["calculator"] == "Evaluate sums."
    assert start.system_prompt == "Be terse."
    assert start.meta["root"] == str(project.resolve())  # the folder the tools could read


def test_user_tools_from_a_module(tmp_path: Path, project: Path, monkeypatch) -> None:
    (tmp_path / "station_tools.py").write_text(
        "from pydantic import BaseModel\n"
        "from agent_core.tools.registry import ToolRegistry\n"
        "registry = ToolRegistry()\n"
        "class A(BaseModel):\n    city: str\n"
        "@registry.tool(A, description='Temperature at a station.', read_only=True)\n"
        "def station_temperature(args):\n    return f'{args.city}: 21 C'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    script = write_script(
        tmp_path,
        [
            {"tool_calls": [{"name": "station_temperature", "arguments": {"city": "Porto"}}]},
            {"content": "21 C"},
        ],
    )
    home = tmp_path / "home"
    tools = ["--tools", "station_tools:registry"]
    code = main(scripted_run("temperature?", script, project, home, *tools))
    assert code == 0
    events = read_trace(traces(home)[0]).events
    assert isinstance(events[0], RunStart)
    assert events[0].tool_sources["station_temperature"] == "user"
    assert any(e.type == "tool_end" and e.result == "Porto: 21 C" for e in events)


@pytest.mark.parametrize("stream", [True, False])
def test_read_a_file_against_a_local_openai_compatible_server(
    tmp_path: Path, project: Path, capsys, stream: bool
) -> None:
    steps = [
        read_step(),
        {
            "content": "It is a tiny demo project.",
            "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57},
        },
    ]
    home = tmp_path / "home"
    with ModelServer(ScriptResponder(steps)) as server:
        args = [
            "run",
            "What is in README.md?",
            "--base-url",
            server.base_url,
            "--model",
            "scripted",
            "--api-key",
            SECRET,
            "--root",
            str(project),
            "--home",
            str(home),
        ]
        code = main(args if stream else [*args, "--no-stream"])
        bodies = server.bodies
    assert code == 0, capsys.readouterr().err
    assert "It is a tiny demo project." in capsys.readouterr().out
    assert [body["stream"] for body in bodies] == [stream, stream]
    assert bodies[1]["messages"][-1]["content"].startswith("1: # demo")
    (trace,) = traces(home)
    assert SECRET.encode() not in trace.read_bytes()
    events = read_trace(trace).events
    assert isinstance(events[0], RunStart)
    assert events[0].base_url == server.base_url
    assert run_end(trace).totals.total_tokens > 57
    chunks = [e for e in events if e.type == "model_chunk"]
    objects = {chunk.data.get("object") for chunk in chunks}
    if stream:
        assert len(chunks) > 2 and objects == {"chat.completion.chunk"}
    else:  # the whole completion is recorded as the call's one raw item
        assert len(chunks) == 2 and objects == {"chat.completion"}


def test_api_key_from_the_environment_never_reaches_the_trace(
    tmp_path: Path, project: Path, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    # The model echoes the key back, as a prompt-injected model might.
    steps = [{"content": f"your key is {SECRET}"}]
    home = tmp_path / "home"
    with ModelServer(ScriptResponder(steps)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("WORKBENCH_MODEL", "scripted")
        assert main(["run", f"use {SECRET}", "--home", str(home), "--root", str(project)]) == 0
    (trace,) = traces(home)
    text = trace.read_text()
    assert SECRET not in text and "[REDACTED:api_key]" in text


def workbench_command() -> list[str]:
    return [sys.executable, "-c", "import sys; from workbench.cli import main; sys.exit(main())"]


def clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    env["WORKBENCH_HOME"] = str(home)
    return env


def test_ctrl_c_on_a_real_process_writes_cancelled(tmp_path: Path, project: Path) -> None:
    script = write_script(
        tmp_path,
        [
            {"tool_calls": [{"name": "list_dir", "arguments": {}}]},
            {"delay_ms": 60_000, "content": "late"},
        ],
    )
    home = tmp_path / "home"
    process = subprocess.Popen(
        [*workbench_command(), "run", "list", "--script", str(script), "--root", str(project)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(home),
    )
    assert process.stdout is not None
    for line in process.stdout:  # the second model call starts right after this line
        if "← list_dir" in line:
            break
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert ": cancelled" in out and "Traceback" not in err
    end = run_end(traces(home)[0])
    assert end.status == "cancelled"


def test_demo_runs_offline_and_records_every_status(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = clean_env(home)
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/unreachable"  # would fail if anything used it
    result = subprocess.run(
        [*workbench_command(), "demo", "--no-tui"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "SCRIPTED model" in result.stdout
    scenario_runs = [p for p in traces(home) if _demo(list(read_trace(p).events))]
    statuses = sorted(run_end(path).status for path in scenario_runs)
    assert statuses == sorted(s.expect for s in SCENARIOS)
    # Besides its runs, the demo ran its regression suite once: 3 cases × 3 samples.
    assert len(list(traces(home))) == len(SCENARIOS) + 9
    assert {"completed", "duplicate_tool_calls", "token_budget", "timeout", "max_turns"} <= set(
        statuses
    )
    recovered = next(
        events
        for events in (read_trace(p).events for p in traces(home))
        if _demo(events) == "tool-error-recovered"
    )
    ends = [e for e in recovered if e.type == "tool_end"]
    assert not ends[0].ok and ends[-1].ok


def test_configured_redaction_patterns_keep_matches_out_of_the_trace(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "redact-patterns.txt").write_text("# customer ids\nCUST-\\d{6}\n")
    monkeypatch.setenv("WORKBENCH_REDACT_PATTERNS", "tok_[a-z]{8}")
    (project / "account.txt").write_text("customer CUST-123456 uses token tok_abcdefgh\n")
    script = write_script(
        tmp_path, [read_step("account.txt"), {"content": "It is CUST-123456 (tok_abcdefgh)."}]
    )
    args = ["run", "Whose account is it?", "--script", str(script), "--root", str(project)]
    assert main([*args, "--home", str(home)]) == 0

    [trace] = traces(home)
    text = trace.read_text(encoding="utf-8")
    assert "CUST-123456" not in text and "tok_abcdefgh" not in text
    assert "[REDACTED:pattern-1]" in text and "[REDACTED:pattern-2]" in text
    assert run_end(trace).status == "completed"


def test_a_bad_redaction_pattern_is_one_clear_line(
    tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "redact-patterns.txt").write_text("ok-\\d+\n(unclosed\n")
    script = write_script(tmp_path, [{"content": "x"}])
    args = scripted_run("t", script, project, home)
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "redact-patterns.txt:2: not a valid regular expression" in err
    assert traces(home) == []  # nothing ran, nothing written


def _demo(events: list[Event]) -> str | None:
    """The demo scenario a trace records (`run_start.meta["demo"]`)."""
    start = events[0]
    assert isinstance(start, RunStart)
    return start.meta.get("demo")


def test_a_long_server_error_is_shown_and_traced_with_its_cause(
    tmp_path: Path, project: Path, capsys
) -> None:
    # The shape of llama.cpp's answer to a request it rejects: a list of failed fields, the
    # one that names the cause late in it.
    fields = [f"messages.{n}.role: Input should be 'tool' [type=literal_error]" for n in range(9)]
    cause = "messages.1.content: Input should be a valid string [input_value=None]"
    message = " ".join(["10 validation errors for ChatCompletionRequest", *fields, cause])
    reply = Reply(status=500, body={"error": {"message": message}}, headers=NO_RETRY)
    home = tmp_path / "home"
    with ModelServer(Sequence(reply)) as server:
        args = ["run", "task", "--base-url", server.base_url, "--model", "m"]
        code = main([*args, "--root", str(project), "--home", str(home)])
    out = capsys.readouterr().out
    assert code == 3 and len(message) > 600
    shown = f"HTTP 500: {message} (not retried: the server sent x-should-retry: false)"
    assert f"  ! model status: {shown}" in out
    events = read_trace(traces(home)[0]).events
    [error] = [e for e in events if isinstance(e, Error)]
    assert error.message == shown
    end = events[-1]
    assert isinstance(end, RunEnd) and end.reason == f"model call failed: {shown}"


@pytest.mark.parametrize("where", ["--api-key", "OPENAI_API_KEY"])
def test_a_non_ascii_api_key_is_one_line_that_does_not_show_it(
    tmp_path: Path, project: Path, where: str
) -> None:
    key = "sk-clé-secrète"
    home = tmp_path / "home"
    env = clean_env(home)
    flags = ["--api-key", key] if where == "--api-key" else []
    if where == "OPENAI_API_KEY":
        env["OPENAI_API_KEY"] = key
    with ModelServer(ScriptResponder([{"content": "never asked"}])) as server:
        command = [*workbench_command(), "run", "task", "--base-url", server.base_url]
        proc = subprocess.run(
            [*command, "--model", "m", *flags, "--root", str(project)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert server.bodies == []
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "API key" in line and "ASCII" in line and where in line
    assert "clé" not in line and "secrète" not in line and "codec" not in line
