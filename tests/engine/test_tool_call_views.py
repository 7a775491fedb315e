"""`show --json` and mcp-serve's `show_run` shape a run differently, but say the same about
each tool: its name (a wire tool's own, when it is not a JSON function) and a call's fields."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.engine.test_fork_wire_tools import _captured_patch_run
from tests.engine.test_proxy_tool_kinds import PATCH
from workbench.cli import main
from workbench.engine.mcp_server.handlers import Workbench

SHARED = {"call_id", "name", "source", "parse_error", "status", "result", "error", "mocked"}


def test_show_json_and_show_run_agree_on_tools_and_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    run_id = _captured_patch_run(home)
    capsys.readouterr()
    assert main(["show", run_id, "--json", "--home", str(home)]) == 0
    shown = json.loads(capsys.readouterr().out)
    served = asyncio.run(Workbench(home).call("show_run", {"run": run_id}))
    assert served["tools_offered"] == ["apply_patch"]
    assert shown["chain"]["turns"][0]["request"]["tools"] == ["apply_patch"]
    [cli_call] = shown["chain"]["turns"][0]["tool_calls"]
    [mcp_call] = served["turns"][0]["tool_calls"]
    assert set(cli_call) & set(mcp_call) >= SHARED
    assert {k: cli_call[k] for k in SHARED} == {k: mcp_call[k] for k in SHARED}
    assert (cli_call["name"], cli_call["status"]) == ("apply_patch", "ok")
    assert mcp_call["arguments"] == cli_call["arguments"] == {"input": PATCH}
