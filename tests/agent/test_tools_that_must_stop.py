"""Tools that time out must stop: catastrophic regular expressions, FIFOs, devices, huge
sparse files, and sync handlers the loop gave up on."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest
from pydantic import BaseModel

from agent_core.tools.builtin import builtin_tools
from agent_core.tools.registry import ToolRegistry, check_cancelled
from tests.agent.scripted_run import call, run_agent
from traces.events import Limits


async def run_tool(root: Path, name: str, **arguments: object) -> tuple[bool, str]:
    result = await builtin_tools(root).call(name, dict(arguments), "call_1")
    return result.ok, result.text


async def test_a_catastrophic_regex_is_refused_not_run_forever(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("fine\n" + "a" * 40 + "!\n")
    ok, text = await run_tool(tmp_path, "search_files", query="(a|aa)+$", regex=True)
    assert not ok and "takes too long on notes.txt:2" in text


async def test_a_fifo_is_refused_without_opening_it_for_good(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.jsonl")
    ok, text = await run_tool(tmp_path, "read_file", path="pipe.jsonl")
    assert not ok and "not a regular file" in text
    ok, text = await run_tool(tmp_path, "search_files", query="x")
    assert ok and "no matches" in text


async def test_a_character_device_in_the_root_is_refused(tmp_path: Path) -> None:
    try:
        os.mknod(tmp_path / "zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("creating a device node needs root (CAP_MKNOD)")
    ok, text = await run_tool(tmp_path, "read_file", path="zero")
    assert not ok and "not a regular file" in text


async def test_a_huge_sparse_file_is_refused_after_reading_its_head(tmp_path: Path) -> None:
    (tmp_path / "sparse.bin").touch()
    os.truncate(tmp_path / "sparse.bin", 2 * 1024**3)
    tracemalloc.start()
    try:
        ok, text = await run_tool(tmp_path, "read_file", path="sparse.bin")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not ok and "binary file" in text
    assert peak < 20 * 1024**2  # the head only, not 2 GB


class Empty(BaseModel):
    pass


async def test_a_sync_handler_that_timed_out_is_told_to_stop() -> None:
    tools = ToolRegistry()
    stopped = threading.Event()

    @tools.tool(Empty, description="Works until told to stop.", read_only=True)
    def busy(args: Empty) -> str:
        try:
            while True:
                check_cancelled()
        finally:
            stopped.set()

    outcome = await run_agent(
        [{"tool_calls": [call("busy")]}, {"content": "never"}],
        [tools],
        limits=Limits(tool_timeout_s=0.2),
    )
    assert outcome.result.status == "timeout" and outcome.result.timeout_layer == "tool"
    assert stopped.wait(timeout=10)  # the thread ended; it did not spin on


# The start of a script that defines sync tools, run in a process of its own.
TOOLS_SCRIPT = r"""
import asyncio, os, threading
from pydantic import BaseModel
from agent_core.agent import Agent, AgentConfig
from agent_core.model.scripted import ScriptedModel
from agent_core.tools.registry import ToolRegistry
from traces.events import Limits

class Empty(BaseModel):
    pass

tools = ToolRegistry()
"""

STUCK_RUN = (
    TOOLS_SCRIPT
    + r"""
@tools.tool(Empty, description="Blocks for good.", read_only=True)
def stuck(args: Empty) -> str:
    threading.Event().wait()  # never set, never checks for cancellation
    return "unreachable"

model = ScriptedModel([{"tool_calls": [{"name": "stuck", "arguments": {}}]}, {"content": "x"}])
agent = Agent(model, [tools], AgentConfig(task="t", limits=Limits(tool_timeout_s=0.3)))

async def main() -> None:
    result = await agent.run()
    print(result.status, result.timeout_layer, flush=True)

asyncio.run(main())
"""
)


def test_a_stuck_sync_tool_does_not_keep_the_process_alive() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", STUCK_RUN], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["timeout", "tool"]


async def test_sync_calls_share_a_thread_but_never_one_still_busy_with_a_call_given_up_on() -> None:
    tools = ToolRegistry()
    release, ran_on = threading.Event(), []

    @tools.tool(Empty, description="Blocks until released.", read_only=True)
    def stuck(args: Empty) -> str:
        ran_on.append(threading.get_ident())
        release.wait()  # never checks for cancellation
        return "late"

    @tools.tool(Empty, description="Says where it ran.", read_only=True)
    def where(args: Empty) -> str:
        ran_on.append(threading.get_ident())
        return threading.current_thread().name

    try:
        first = await tools.call("where", {}, "call_1")
        second = await tools.call("where", {}, "call_2")
        assert first.text == second.text == "tool-where" and ran_on[0] == ran_on[1]
        given_up = await run_agent(
            [{"tool_calls": [call("stuck")]}, {"content": "never"}],
            [tools],
            limits=Limits(tool_timeout_s=0.2),
        )
        assert given_up.result.timeout_layer == "tool" and ran_on[2] == ran_on[0]
        after = await tools.call("where", {}, "call_3")  # the stuck thread cannot take it
        assert after.ok and after.text == "tool-where" and ran_on[3] != ran_on[2]
    finally:
        release.set()


FORKED_CALL = (
    TOOLS_SCRIPT
    + r"""
@tools.tool(Empty, description="Says hello.", read_only=True)
def hello(args: Empty) -> str:
    return "hello"

print(asyncio.run(tools.call("hello", {}, "parent")).text, flush=True)
child = os.fork()  # the parent's idle thread is not in the child
if child == 0:
    print(asyncio.run(tools.call("hello", {}, "child")).text, flush=True)
    os._exit(0)
os.waitpid(child, 0)
"""
)


def test_a_forked_child_calls_sync_tools_on_threads_of_its_own() -> None:
    proc = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", FORKED_CALL],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["hello", "hello"]
