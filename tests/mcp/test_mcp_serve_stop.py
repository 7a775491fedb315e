"""Stopping `workbench mcp-serve --allow-writes` the ways people do while it records a fork,
with every core busy: Ctrl-C to the whole process group (as a terminal sends it), SIGTERM
from a service manager, and the coding agent closing the server's stdin. The run in
progress is never left half-written: its trace ends with `run_end` status `cancelled`, and
the server exits without a traceback.

The server is driven as a coding agent drives it, JSON-RPC lines on its stdin, and forks
a demo run against a model that takes the request and never answers: the fork is in
progress, for certain, when the server is stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.busy import busy_cores
from tests.support.processes import WAIT_S, WORKBENCH, Lines, killed_after
from traces.events import Event, RunEnd
from traces.reader import read_trace
from workbench.engine.http.model_server import ModelServer, Reply


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("mcp-serve-stop") / "home"
    done = subprocess.run(
        [WORKBENCH, "demo", "--no-tui", "--home", str(home)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return home


class Unanswering:
    """A model that takes each request and never answers; `asked` once one came."""

    def __init__(self) -> None:
        self.asked = threading.Event()

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.asked.set()
        return Reply(body={}, stall_after=0)


def send(process: subprocess.Popen[str], message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    process.stdin.flush()


def fork_in_progress(home: Path, model: Unanswering, base_url: str) -> subprocess.Popen[str]:
    """mcp-serve in a process group of its own, asked to fork a demo run; returns once the
    fork's model has been asked."""
    trace = next((home / "traces").glob("*.jsonl"))
    last_turn = max(event.turn or 0 for event in read_trace(trace).events)
    env = {key: value for key, value in os.environ.items() if key != "WORKBENCH_HOME"}
    env |= {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "k", "WORKBENCH_MODEL": "m"}
    process = subprocess.Popen(
        [WORKBENCH, "mcp-serve", "--allow-writes", "--home", str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert process.stdout is not None
    out = Lines(process.stdout)
    client = {"name": "test", "version": "0"}
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    send(process, {"id": 1, "method": "initialize", "params": params})
    assert out.wait_for(lambda line: '"id":1' in line.replace(" ", "")), "no answer"
    send(process, {"method": "notifications/initialized"})
    arguments = {"run": trace.stem, "turn": last_turn, "allow_side_effects": False}
    send(
        process,
        {
            "id": 2,
            "method": "tools/call",
            "params": {"name": "fork_run", "arguments": arguments | {"dry_run": False}},
        },
    )

    def answered() -> None:  # the fork ended before it asked its model: stop waiting
        if out.wait_for(lambda line: '"id":2' in line) is not None:
            model.asked.set()

    threading.Thread(target=answered, daemon=True).start()
    assert model.asked.wait(WAIT_S)
    assert not any('"id":2' in line for line in out.seen), out.seen
    return process


def forks(home: Path, before: set[Path]) -> list[list[Event]]:
    """The events of each trace written since `before`."""
    paths = set((home / "traces").glob("*.jsonl")) - before
    return [read_trace(path).events for path in paths]


@pytest.mark.parametrize("stop", ["ctrl-c to the group", "sigterm", "stdin closed"])
def test_a_stopped_mcp_serve_ends_the_fork_it_was_recording_as_cancelled(
    demo_home: Path, stop: str
) -> None:
    before = set((demo_home / "traces").glob("*.jsonl"))
    model = Unanswering()
    with busy_cores(), ModelServer(model, keep_requests=False) as upstream:
        with killed_after(fork_in_progress(demo_home, model, upstream.base_url)) as process:
            assert process.stderr is not None and process.stdin is not None
            err = Lines(process.stderr)
            if stop == "sigterm":
                process.send_signal(signal.SIGTERM)
            elif stop == "stdin closed":
                process.stdin.close()
            else:
                os.killpg(process.pid, signal.SIGINT)
            code = process.wait(timeout=WAIT_S)
        lines = err.all()
    assert code == 0 and not any("Traceback" in line for line in lines), "\n".join(lines)
    (fork,) = forks(demo_home, before)
    assert fork[0].type == "run_start"
    assert isinstance(fork[-1], RunEnd) and fork[-1].status == "cancelled", fork[-1]
