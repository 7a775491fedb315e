"""Stopping `workbench collect` the ways people do, with every core busy: Ctrl-C to the
whole process group (as a terminal sends it) and SIGTERM. Every trace a client was answered
for is written as a run before it exits 0, the traces still waiting for their root span
too; its stdout and stderr are pipes, read as they come."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.support.busy import busy_cores
from tests.support.processes import WAIT_S, WORKBENCH, Lines

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")

FIXTURE = Path(__file__).parent / "fixtures" / "genai-agent.json"
TRACES = 12


def export(number: int) -> bytes:
    """The fixture's agent trace under a trace id of its own."""
    document = json.loads(FIXTURE.read_text(encoding="utf-8"))
    for span in document["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["traceId"] = f"{number:032x}"
    return json.dumps(document).encode()


@pytest.mark.parametrize("stop", ["ctrl-c to the group", "sigterm"])
def test_a_stopped_collector_writes_every_trace_it_answered(tmp_path: Path, stop: str) -> None:
    home = tmp_path / "home"
    with busy_cores():
        process = subprocess.Popen(
            [WORKBENCH, "--home", str(home), "collect", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            assert process.stdout is not None and process.stderr is not None
            out, err = Lines(process.stdout), Lines(process.stderr)
            ready = out.wait_for(lambda line: line.startswith("collecting "))
            assert ready is not None, err.all()
            endpoint = next(word for word in ready.split() if word.startswith("http://"))
            for number in range(1, TRACES + 1):
                request = urllib.request.Request(
                    endpoint,  # the traces path
                    data=export(number),
                    headers={"Content-Type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=WAIT_S) as answer:
                    assert answer.status == 200
            if stop == "sigterm":
                process.send_signal(signal.SIGTERM)
            else:
                os.killpg(process.pid, signal.SIGINT)
            code = process.wait(timeout=WAIT_S)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    lines = err.all()
    assert code == 0 and not any("Traceback" in line for line in lines), lines
    assert out.all()[-1].startswith(f"stopped; {TRACES} run(s) from ")
    assert len(list((home / "traces").glob("*.jsonl"))) == TRACES
