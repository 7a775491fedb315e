"""`workbench mcp-serve` held to its bounds the way a careless or hostile client meets them:
errors as bounded as answers, whatever an argument holds; a burst of calls served from one
open store that is let go when idle; a closed stdin ends the server even mid-call."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.mcp.test_mcp_serve import WORKBENCH, _env, call, demo_home, refused
from tests.support.big_traces import small_run_lines
from traces.store import TraceStore
from workbench.engine.mcp_server.handlers import Workbench

__all__ = ["demo_home"]  # the module's fixture, shared

# What one error may cost a client's context: a line, never the argument it echoes.
MAX_ERROR = 600


@asynccontextmanager
async def served(home: Path, errlog: TextIO, *flags: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=WORKBENCH[0],
        args=[*WORKBENCH[1:], "mcp-serve", "--home", str(home), *flags],
        env=_env(),
    )
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_errors_are_one_bounded_line_whatever_the_arguments_hold(
    demo_home: Path, tmp_path: Path
) -> None:
    long_id = "a" * 10_000
    with (tmp_path / "stderr").open("w+", encoding="utf-8") as errlog:
        async with served(demo_home, errlog, "--allow-writes") as session:
            cases: list[tuple[str, dict[str, Any], str]] = [
                ("show_run", {"run": long_id}, "list_runs"),
                ("show_run", {"run": "x" * 10_000}, "not a run id"),
                ("list_runs", {"status": "s" * 10_000}, "must be one of"),
                ("search_runs", {"text": "t", "run": long_id}, "list_runs"),
                ("diff_runs", {"run_a": long_id, "run_b": long_id}, "list_runs"),
                ("run_suite", {"suite": "s" * 5_000}, "suite"),
                ("run_suite", {"suite": "suite\x00.toml"}, "suite"),
                ("run_suite", {"suite": "s" * 5_000, "script": "x\x00"}, "suite"),
                (
                    "run_suite",
                    {"suite": "demo-suite.wbsuite.toml", "script": "x" * 5_000},
                    "script",
                ),
                ("run_suite", {"suite": "demo-suite.wbsuite.toml", "baseline": "b\x00"}, ""),
                ("replay_run", {"run": "\x00" * 10}, "not a run id"),
                ("fork_run", {"run": long_id, "turn": 1, "dry_run": True}, "list_runs"),
                ("no_such_tool_" + "n" * 10_000, {}, "no tool"),
            ]
            for name, arguments, says in cases:
                text = await refused(session, name, **arguments)
                assert says in text and len(text) <= MAX_ERROR, (name, len(text), text[:200])
            assert (await call(session, "list_runs"))["total"] > 0  # still serving
        errlog.seek(0)
        logged = errlog.read()
    assert "Traceback" not in logged, logged[-3000:]


def test_a_burst_of_calls_opens_the_store_once_and_lets_it_go_when_idle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    (home / "traces" / f"{'1' * 32}.jsonl").write_bytes(small_run_lines("1" * 32))
    opened: list[Path] = []
    real_open = TraceStore.open.__func__  # type: ignore[attr-defined]

    def counting_open(cls: type[TraceStore], path: Path | str, *args: Any, **kw: Any) -> Any:
        opened.append(Path(path))
        return real_open(cls, path, *args, **kw)

    monkeypatch.setattr(TraceStore, "open", classmethod(counting_open))
    workbench = Workbench(home)
    for _ in range(200):
        assert workbench.list_runs(limit=10, offset=0)["total"] == 1
    assert len(opened) == 1
    # A trace written meanwhile is seen by the next call: new traces are still looked for.
    (home / "traces" / f"{'2' * 32}.jsonl").write_bytes(small_run_lines("2" * 32))
    assert workbench.list_runs(limit=10, offset=0)["total"] == 2
    # Once idle the store is let go: another process opens it.
    assert workbench.store_released.wait(30)
    done = subprocess.run(
        [*WORKBENCH, "runs", "--json", "--home", str(home)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 2
    assert workbench.list_runs(limit=10, offset=0)["total"] == 2  # and it opens again
    workbench.close()


def test_a_closed_stdin_ends_the_server_with_a_call_still_running(demo_home: Path) -> None:
    """The call waits for the store, which this test holds: the server must not wait for
    it once its client is gone."""
    holder = TraceStore.for_home(demo_home)
    try:
        server = subprocess.Popen(
            [*WORKBENCH, "mcp-serve", "--home", str(demo_home)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        assert server.stdin is not None and server.stdout is not None
        for message in (
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        ):
            server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == 0
        server.stdin.write(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "list_runs", "arguments": {}},
                }
            )
            + "\n"
        )
        server.stdin.close()
        server.wait(timeout=120)
        assert server.stderr is not None
        err = server.stderr.read()
        # Ended while the store was still held here: a call already at work in a thread was
        # not waited for (and said so); one not yet started when stdin ended was cancelled.
        assert server.returncode == 0, err
        assert "Traceback" not in err and err in (
            "",
            "stdin closed: 1 call still running was left unfinished\n",
        ), err
    finally:
        holder.close()
