"""`workbench proxy` records a streamed answer when it is whole for the client: at `[DONE]`
(or once a chunk has carried a finish reason), not when the upstream closes the stream."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.engine.capture_support import STEPS, read_run, run_agent
from tests.engine.test_serve_model import serve
from workbench.engine.model_server import ModelServer, Reply, ScriptResponder
from workbench.engine.proxy import RecordingProxy

WORKBENCH = str(Path(sys.executable).with_name("workbench"))


class HeldOpen:
    """The scripted model's streams, each kept open after its last chunk (`[DONE]` or not)
    until the upstream server stops: what a server that is slow to close its streams does."""

    def __init__(self, steps: list[dict[str, Any]], *, done: bool = True) -> None:
        self.script = ScriptResponder(steps, model="demo-model")
        self.done = done

    def __call__(self, body: dict[str, Any]) -> Reply:
        reply = self.script(body)
        if reply.chunks is None:
            return reply
        chunks = [*reply.chunks, "data: [DONE]"] if self.done else list(reply.chunks)
        return Reply(chunks=chunks, stall_after=len(chunks))


def workbench_json(*args: str) -> Any:
    done = subprocess.run([WORKBENCH, *args, "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_answer_is_recorded_at_done_while_the_upstream_keeps_the_stream_open(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    # The openai SDK stops reading at `[DONE]` and closes the connection; the upstream
    # holds each stream open until it stops, after the proxy has.
    with (
        ModelServer(HeldOpen(STEPS)) as upstream,
        RecordingProxy(upstream.base_url, home) as proxy,
    ):
        answer = run_agent(proxy.base_url, stream=True)
    assert answer == STEPS[1]["content"]

    listed = workbench_json("runs", "--home", str(home))
    assert [(r["status"], r["origin"]) for r in listed] == [("completed", "captured")]
    run_id = listed[0]["run_id"]
    events = read_run(home, run_id)
    assert [e["turn"] for e in events if e["type"] == "model_response"] == [1, 2]
    assert [e["name"] for e in events if e["type"] == "tool_start"] == ["read_file", "calculator"]
    assert events[-1]["type"] == "run_end" and events[-1]["final_answer"] == answer
    assert "workbench proxy:" not in capfd.readouterr().err

    # The capture replays: the same agent gets the same answer offline.
    with serve("--replay", run_id, "--home", str(home)) as base_url:
        assert run_agent(base_url, stream=True) == answer
