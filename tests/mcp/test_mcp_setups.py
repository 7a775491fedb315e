"""MCP setups people really use, through `workbench run --mcp-config`: the most used server
(server-filesystem) next to the built-in tools, more tools than one request may carry, and a
server whose tools change mid-run. Real servers; only the model's answers are scripted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.mcp_support import fault, filesystem_server, time_server, write_config
from traces.events import McpMessage, RunEnd, RunStart, ToolEnd, ToolsChanged, ToolStart
from traces.reader import read_trace
from workbench.cli import main


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = (tmp_path / "project").resolve()
    (root / "docs").mkdir(parents=True)
    (root / "notes.txt").write_text("Buy oat milk.\n", encoding="utf-8")
    (root / "docs" / "guide.md").write_text("# Guide\n", encoding="utf-8")
    return root


def run(tmp_path: Path, steps: list[dict[str, Any]], *flags: str) -> tuple[int, list[Any]]:
    tmp_path.mkdir(exist_ok=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": steps}), encoding="utf-8")
    home = tmp_path / "home"
    code = main(["run", "--script", str(script), "--home", str(home), *flags])
    [path] = (home / "traces").glob("*.jsonl")
    return code, read_trace(path).events


def of(events: list[Any], kind: type) -> list[Any]:
    return [event for event in events if isinstance(event, kind)]


def call(name: str, arguments: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def test_server_filesystem_next_to_the_builtins_lists_a_directory(
    tmp_path: Path, project: Path, capsys
) -> None:
    config = write_config(tmp_path, {"fs": filesystem_server(project)})
    steps = [
        call("list_directory", {"path": str(project)}),
        call("fs__read_file", {"path": str(project / "notes.txt")}, "c2"),
        {"content": "It holds notes.txt and docs/."},
    ]
    code, events = run(
        tmp_path, steps, "List the directory of the project and read its notes file.",
        "--root", str(project), "--mcp-config", str(config), "--max-tools", "20",
    )  # fmt: skip
    out = capsys.readouterr().out
    end = events[-1]
    assert isinstance(end, RunEnd) and (code, end.status) == (0, "completed"), end.reason
    [start] = of(events, RunStart)
    # The server's read_file and search_files clash with the built-ins: offered prefixed.
    assert start.renamed_tools == {"fs__read_file": "read_file", "fs__search_files": "search_files"}
    offered = [tool["function"]["name"] for tool in start.tools]
    assert {"read_file", "search_files", "fs__read_file", "list_directory"} <= set(offered)
    assert start.tool_sources["read_file"] == "builtin"
    assert start.tool_sources["fs__read_file"] == "mcp:fs"
    assert start.tools_dropped == []
    assert "renamed to avoid a name clash: fs__read_file (its own name: read_file)" in out

    listing, reading = of(events, ToolStart)
    assert (listing.name, listing.source, listing.source_name) == ("list_directory", "mcp:fs", None)
    assert (reading.name, reading.source, reading.source_name) == (
        "fs__read_file", "mcp:fs", "read_file",
    )  # fmt: skip
    listed, read = of(events, ToolEnd)
    assert listed.ok and "[FILE] notes.txt" in listed.result and "[DIR] docs" in listed.result
    assert read.ok and read.result == "Buy oat milk.\n"
    # The server was asked by its own name.
    sent = [e.frame for e in of(events, McpMessage) if e.frame.get("method") == "tools/call"]
    assert [frame["params"]["name"] for frame in sent] == ["list_directory", "read_file"]
    # Offline replay serves the calls from the recording, under both names again.
    assert main(["replay", start.run_id, "--home", str(tmp_path / "home")]) == 0

    # A fork runs a new call of the renamed tool on the server's read_file, not the built-in.
    script = tmp_path / "fork.json"
    steps = [call("fs__read_file", {"path": str(project / "docs" / "guide.md")}, "c3")]
    script.write_text(json.dumps({"steps": [*steps, {"content": "A guide."}]}))
    code = main(
        [
            "fork", start.run_id, "--turn", "2", "--script", str(script),
            "--home", str(tmp_path / "home"), "--root", str(project),
            "--mcp-config", str(config), "--allow-side-effects",
        ]
    )  # fmt: skip
    assert code == 0
    [fork] = [p for p in (tmp_path / "home" / "traces").glob("*.jsonl") if p.stem != start.run_id]
    forked = read_trace(fork).events
    [again] = of(forked, ToolStart)
    assert (again.name, again.source, again.source_name) == ("fs__read_file", "mcp:fs", "read_file")
    [result] = of(forked, ToolEnd)
    assert result.ok and result.result == "# Guide\n"


def test_builtin_tools_can_be_chosen_or_left_out(tmp_path: Path, project: Path) -> None:
    config = write_config(tmp_path, {"fs": filesystem_server(project)})
    steps = [call("read_file", {"path": str(project / "notes.txt")}), {"content": "Done."}]
    flags = ["--root", str(project), "--mcp-config", str(config), "--max-tools", "20"]
    code, events = run(tmp_path / "none", steps, "Read notes.", *flags, "--no-builtin-tools")
    [start] = of(events, RunStart)
    assert code == 0 and start.renamed_tools == {}  # nothing clashes: the server's own names
    assert {source for source in start.tool_sources.values()} == {"mcp:fs"}
    [reading] = of(events, ToolStart)
    assert (reading.source, reading.source_name) == ("mcp:fs", None)

    code, events = run(
        tmp_path / "some", steps, "Read notes.", *flags, "--builtin-tools", "calculator,list_dir"
    )
    [start] = of(events, RunStart)
    assert code == 0 and start.renamed_tools == {}
    builtins = sorted(n for n, s in start.tool_sources.items() if s == "builtin")
    assert builtins == ["calculator", "list_dir"]


def test_an_unknown_builtin_is_a_usage_error(tmp_path: Path, project: Path, capsys) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"content": "x"}]}), encoding="utf-8")
    args = ["run", "task", "--script", str(script), "--root", str(project)]
    assert main([*args, "--home", str(tmp_path), "--builtin-tools", "read_file,cat"]) == 2
    err = capsys.readouterr().err
    assert "--builtin-tools: no built-in tool named cat (built-ins: read_file," in err
    assert err.count("\n") == 1


def fifteen_tools(tmp_path: Path) -> Path:
    """Three real servers, 15 tools: the fault server's 9, the time server's 2, and four
    built-ins."""
    return write_config(tmp_path, {"time": time_server(), "fault": fault()})


def test_with_15_tools_the_user_is_told_which_are_left_out(
    tmp_path: Path, project: Path, capsys
) -> None:
    config = fifteen_tools(tmp_path)
    steps = [call("get_current_time", {"timezone": "UTC"}), {"content": "Noon."}]
    flags = ["--root", str(project), "--mcp-config", str(config)]
    code, events = run(tmp_path / "default", steps, "What time is it now in UTC?", *flags)
    out = capsys.readouterr().out
    [start] = of(events, RunStart)
    assert len(start.tools) == 8 and len(start.tools_dropped) == 7
    offered = {tool["function"]["name"] for tool in start.tools}
    assert "get_current_time" in offered and offered.isdisjoint(start.tools_dropped)
    assert len(offered | set(start.tools_dropped)) == 15
    assert code == 0
    warning = next(line for line in out.splitlines() if "warning:" in line)
    assert warning == (
        "  warning: 7 tools not offered (at most 8 per request; raise it with --max-tools): "
        + ", ".join(start.tools_dropped)
    )
    # The recording replays identically: the same tools are left out again.
    assert main(["replay", start.run_id, "--home", str(tmp_path / "default" / "home")]) == 0

    # A tool that --tool-choice names is always among those offered.
    forced = start.tools_dropped[0]
    code, events = run(tmp_path / "forced", steps, "What time is it now in UTC?", *flags,
                       "--tool-choice", forced)  # fmt: skip
    [start] = of(events, RunStart)
    assert forced in [tool["function"]["name"] for tool in start.tools]
    assert len(start.tools) == 8 and len(start.tools_dropped) == 7
    capsys.readouterr()

    code, events = run(tmp_path / "twenty", steps, "What time is it?", *flags, "--max-tools", "20")
    [start] = of(events, RunStart)
    assert code == 0 and len(start.tools) == 15 and start.tools_dropped == []
    assert "warning:" not in capsys.readouterr().out


def test_tools_that_change_mid_run_are_offered_from_the_next_turn(
    tmp_path: Path, project: Path, capsys
) -> None:
    config = write_config(tmp_path, {"fault": fault()})
    steps = [call("grow", {}), call("extra", {}, "c2"), {"content": "Both worked."}]
    code, events = run(
        tmp_path, steps, "Grow the server.", "--root", str(project),
        "--mcp-config", str(config), "--max-tools", "20",
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    [changed] = of(events, ToolsChanged)
    assert changed.turn == 2 and changed.source == "mcp:fault"
    assert (changed.added, changed.removed, changed.dropped) == (["extra"], [], [])
    assert "extra" in [tool["function"]["name"] for tool in changed.tools]
    requests = [e for e in events if e.type == "model_request"]
    assert "extra" not in [tool["function"]["name"] for tool in requests[0].tools]
    assert requests[1].tools == changed.tools
    assert [e.ok for e in of(events, ToolEnd)] == [True, True]
    # The change is recorded after the re-listing and before the request that offers it.
    assert requests[0].seq < changed.seq < requests[1].seq
    assert "  ⟳ tools of mcp:fault changed (+extra); 14 offered from this turn" in out
    # Offline, the recorded change happens again at the same turn.
    assert main(["replay", changed.run_id, "--home", str(tmp_path / "home")]) == 0
