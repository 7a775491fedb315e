"""Servers that misbehave on purpose (tests/mcp/servers/hostile_server.py, a real
subprocess): noise and invalid UTF-8 on stdout, silence at start, endless pagination, a
result nested too deeply to read, and children left behind. Each ends in a clean tool
error or start error, within its time limit, with one log line per server and no child
process left over."""

from __future__ import annotations

import logging
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_core.mcp_tools import McpStartError, open_mcp_toolsets
from tests.mcp.mcp_support import child_pids, frames, gone, new_recorder, write_config

HOSTILE = Path(__file__).resolve().parent / "servers" / "hostile_server.py"


def hostile(*flags: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(HOSTILE), *flags]}


@pytest.mark.parametrize("flag", ["--noise", "--bad-utf8"])
async def test_output_that_is_not_json_rpc_is_recorded_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, flag: str
) -> None:
    config = write_config(tmp_path, {"loud": hostile(flag)})
    recorder, sink = new_recorder()
    with caplog.at_level(logging.WARNING):
        async with open_mcp_toolsets(config, recorder) as (toolset,):
            for n in range(3):
                result = await toolset.call("echo", {"message": f"hi {n}"}, f"c{n}")
                assert result.ok and result.text == f"Echo: hi {n}"
    bad = [f.frame for f in frames(sink) if "_unparsed" in f.frame]
    assert len(bad) >= 5  # initialize, tools/list and three calls each came with one
    assert "Traceback" not in caplog.text
    assert "Failed to parse JSONRPC" not in caplog.text
    ours = [r for r in caplog.records if "not JSON-RPC" in r.getMessage()]
    assert len(ours) == 1 and "'loud'" in ours[0].getMessage()


async def test_a_server_that_never_answers_initialize_fails_at_the_start_timeout(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"mute": hostile("--silent")})
    recorder, _ = new_recorder()
    with anyio.fail_after(10), pytest.raises(McpStartError, match=r"within 0\.5s"):
        async with open_mcp_toolsets(config, recorder, startup_timeout_s=0.5):
            pass


def test_the_start_timeout_is_a_flag(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"mute": hostile("--silent")})
    command = "import sys; from workbench.cli import main; sys.exit(main())"
    proc = subprocess.run(
        [
            *(sys.executable, "-c", command, "--home", str(tmp_path / "home"), "mcp", "list"),
            *("--mcp-config", str(config), "--mcp-start-timeout", "0.5"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "no answer to initialize/tools/list within 0.5s" in proc.stderr


async def test_endless_pagination_lists_each_tool_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = write_config(tmp_path, {"srv": hostile("--endless-pages")})
    recorder, _ = new_recorder()
    with caplog.at_level(logging.WARNING), anyio.fail_after(30):
        async with open_mcp_toolsets(config, recorder) as (toolset,):
            assert [spec.name for spec in toolset.specs()] == ["echo", "deep", "spawn"]
    assert "more tools after 100 pages" in caplog.text


async def test_a_result_nested_too_deeply_is_a_clean_tool_error(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"deep": hostile()})
    recorder, _ = new_recorder()
    async with open_mcp_toolsets(config, recorder, tool_timeout_s=20) as (toolset,):
        with anyio.fail_after(5):  # well before the tool timeout
            result = await toolset.call("deep", {}, "c1")
        assert not result.ok and result.error == "mcp_rpc_error"
        assert "could not be read: recursion limit exceeded" in result.text
        after = await toolset.call("echo", {"message": "still here"}, "c2")
        assert after.ok


async def test_children_of_a_server_end_with_its_process_group(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"parent": hostile()})
    recorder, _ = new_recorder()
    before = child_pids()
    async with open_mcp_toolsets(config, recorder) as (toolset,):
        (server,) = child_pids() - before
        result = await toolset.call("spawn", {}, "c1")
        sleeper = os.pidfd_open(int(result.text))  # readable once the process has ended
        assert os.getpgid(int(result.text)) == server
    try:
        assert gone(server)
        ended, _, _ = select.select([sleeper], [], [], 5)
        assert ended, "the server's child outlived it"
    finally:
        os.close(sleeper)
