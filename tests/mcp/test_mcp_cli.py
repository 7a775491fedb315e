"""`workbench mcp list`, `workbench mcp call` and `workbench run --mcp-config` from the command
line: traced like a run, one-line errors, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.mcp.mcp_support import fault, node, time_server, write_config
from traces.events import McpMessage, RunEnd, RunStart, ToolEnd, ToolStart
from traces.reader import read_trace
from workbench.cli import main


def only_trace(home: Path) -> list:
    (path,) = sorted((home / "traces").glob("*.jsonl"))
    return read_trace(path).events


def test_mcp_list_prints_servers_tools_and_schemas(tmp_path: Path, capsys) -> None:
    config = write_config(tmp_path, {"time": time_server(), "fault": fault()})
    home = tmp_path / "home"
    assert main(["mcp", "list", "--mcp-config", str(config), "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert "time  (stdio: " in out and "mcp-time" in out and "2 tools" in out
    assert "  get_current_time  Get current time in a specific timezone" in out
    assert "      timezone*: string  IANA timezone name" in out
    assert "fault  (stdio: " in out and "      a*: number" in out

    events = only_trace(home)
    assert isinstance(events[0], RunStart) and events[0].task == "mcp list"
    assert isinstance(events[-1], RunEnd) and events[-1].status == "completed"
    servers = {e.server for e in events if isinstance(e, McpMessage)}
    assert servers == {"time", "fault"}


def test_mcp_list_json(tmp_path: Path, capsys) -> None:
    config = write_config(tmp_path, {"fault": fault()})
    args = ["mcp", "list", "--json", "--mcp-config", str(config), "--home", str(tmp_path)]
    assert main(args) == 0
    (server,) = json.loads(capsys.readouterr().out)
    assert server["server"] == "fault" and server["transport"] == "stdio"
    echo = server["tools"][0]
    assert echo["name"] == echo["offered_as"] == "echo"
    assert echo["input_schema"]["$schema"].startswith("http://json-schema.org")
    assert "$schema" not in echo["parameters"] and "title" not in echo["parameters"]


def test_mcp_call_is_traced_like_a_run(tmp_path: Path, capsys) -> None:
    config = write_config(tmp_path, {"time": time_server()})
    home = tmp_path / "home"
    code = main(
        [
            "mcp",
            "call",
            "time",
            "get_current_time",
            '{"timezone": "Europe/Warsaw"}',
            "--mcp-config",
            str(config),
            "--home",
            str(home),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0 and json.loads(captured.out)["timezone"] == "Europe/Warsaw"
    assert "trace: " in captured.err

    events = only_trace(home)
    types = [e.type for e in events]
    assert types[0] == "run_start" and types[-1] == "run_end"
    start = next(e for e in events if isinstance(e, ToolStart))
    end = next(e for e in events if isinstance(e, ToolEnd))
    assert start.source == "mcp:time" and start.arguments == {"timezone": "Europe/Warsaw"}
    assert end.ok and '"Europe/Warsaw"' in end.result
    inside = [e for e in events if isinstance(e, McpMessage) and start.seq < e.seq < end.seq]
    assert [e.frame.get("method") for e in inside] == ["tools/call", None]
    assert events[-1].totals.tool_calls == 1


def test_mcp_call_tool_errors_exit_1_and_unlisted_tools_are_still_sent(
    tmp_path: Path, capsys
) -> None:
    config = write_config(tmp_path, {"fault": fault()})
    base = ["--mcp-config", str(config), "--home", str(tmp_path)]
    assert main(["mcp", "call", "fault", "nope", *base]) == 1
    captured = capsys.readouterr()
    assert captured.out.strip() == "Error: Unknown tool: nope (JSON-RPC error -32602)"
    assert "note: server 'fault' does not list 'nope'" in captured.err
    # The trace says the session failed, and why.
    [first] = (tmp_path / "traces").glob("*.jsonl")
    end = read_trace(first).events[-1]
    assert isinstance(end, RunEnd) and end.status == "error"
    assert end.reason == (
        "tool 'nope' of MCP server 'fault' failed: Error: Unknown tool: nope (JSON-RPC error "
        "-32602)"
    )
    assert main(["mcp", "call", "fault", "hang", "--timeout", "0.3", *base]) == 1
    assert "timed out after 0.3s" in capsys.readouterr().out
    assert main(["mcp", "call", "fault", "echo", '{"message": "hi"}', *base]) == 0
    traces = (tmp_path / "traces").glob("*.jsonl")
    ends = [end for path in traces if isinstance(end := read_trace(path).events[-1], RunEnd)]
    assert sorted(end.status for end in ends) == ["completed", "error", "error"]
    [ok] = [end for end in ends if end.status == "completed"]
    assert ok.reason == "tool 'echo' of MCP server 'fault' answered"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["mcp", "call", "ghost", "x"], "no server named 'ghost' (servers: fault, broken)"),
        (
            ["mcp", "call", "fault", "echo", '{"message": "hi'],
            "arguments are not valid JSON (Unterminated string starting at position 12)",
        ),
        (["mcp", "call", "fault", "echo", "[1]"], "arguments must be a JSON object"),
        (["mcp", "list", "--server", "broken"], "FAULT_API_KEY is not set; refusing to start"),
    ],
)
def test_mcp_cli_errors_are_one_line(tmp_path: Path, capsys, argv: list[str], message: str) -> None:
    config = write_config(tmp_path, {"fault": fault(), "broken": fault("--fail-start")})
    assert main([*argv, "--mcp-config", str(config), "--home", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if line.startswith("workbench: "))
    assert message in line and "Traceback" not in err


def test_missing_config_file(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORKBENCH_MCP_CONFIG", raising=False)
    assert main(["mcp", "list"]) == 2
    assert "MCP config .mcp.json: no such file; pass --mcp-config FILE" in capsys.readouterr().err


def test_run_with_an_mcp_config(tmp_path: Path, capsys) -> None:
    config = write_config(tmp_path, {"fault": fault()})
    script = tmp_path / "script.json"
    steps = [
        {"tool_calls": [{"name": "echo", "arguments": {"message": "via run"}}]},
        {"content": "done", "when_last_tool_result_contains": "Echo: via run"},
    ]
    script.write_text(json.dumps({"steps": steps}))
    home = tmp_path / "home"
    argv = ["run", "echo it", "--script", str(script), "--mcp-config", str(config)]
    assert main([*argv, "--root", str(tmp_path), "--home", str(home)]) == 0
    events = only_trace(home)
    assert events[-1].status == "completed"
    assert any(isinstance(e, McpMessage) and e.frame.get("method") == "tools/call" for e in events)


def test_run_with_a_server_that_cannot_start_is_one_line(tmp_path: Path, capsys) -> None:
    config = write_config(tmp_path, {"broken": fault("--fail-start")})
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"content": "never"}]}))
    argv = ["run", "x", "--script", str(script), "--mcp-config", str(config)]
    assert main([*argv, "--root", str(tmp_path), "--home", str(tmp_path / "home")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("workbench: --mcp-config ") and "MCP server 'broken'" in err
    assert "refusing to start" in err and "\n" not in err


def test_a_node_server_that_cannot_start_says_which_module_is_missing(
    tmp_path: Path, capsys
) -> None:
    # A long path, as npx caches have: the line naming it must survive the tail's cap.
    missing = tmp_path / ("deep-" * 40) / "server-filesystem" / "dist" / "index.js"
    config = write_config(tmp_path, {"gone": {"command": node(), "args": [str(missing)]}})
    assert main(["mcp", "list", "--mcp-config", str(config), "--home", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    [line] = [line for line in err.splitlines() if line.startswith("workbench: ")]
    assert f"Error: Cannot find module '{missing}'" in line
    assert " at Module." not in line and "Traceback" not in err
