"""Stopping `workbench collect` the ways people do, with every core busy: Ctrl-C to the
whole process group (as a terminal sends it), SIGTERM, and a second Ctrl-C from someone who
will not wait. Every trace a client was answered for is written as a run before it exits 0,
the traces still waiting for their root span too; a second Ctrl-C stops at once, says how
many were not written (their spans stay on disk for the next collect) and exits 3. Its
stdout and stderr are pipes, read as they come."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.busy import busy_cores
from tests.support.processes import WAIT_S, WORKBENCH, Lines, killed_after

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")

FIXTURE = Path(__file__).parent / "fixtures" / "genai-agent.json"
TRACES = 12
# Traces waiting for their root span when the first Ctrl-C comes: writing them takes
# seconds with the cores busy, far longer than the half second before the collector says so.
BACKLOG = 4_000
BATCH = 500  # traces per export request


def export(numbers: range) -> bytes:
    """The fixture's agent trace once per number, under a trace id of its own, without its
    root span: each trace waits for it."""
    document = json.loads(FIXTURE.read_text(encoding="utf-8"))
    scopes = document["resourceSpans"][0]["scopeSpans"]
    scope = scopes[0]  # the model calls; the root span is in the agent's own scope
    scopes[1:] = []
    spans = scope["spans"]
    scope["spans"] = [{**span, "traceId": f"{number:032x}"} for number in numbers for span in spans]
    return json.dumps(document).encode()


@dataclass
class InTerminal:
    """`workbench collect` as a terminal runs it: a process group of its own."""

    process: subprocess.Popen[str]
    out: Lines
    err: Lines
    endpoint: str

    def post(self, numbers: range) -> None:
        request = urllib.request.Request(
            self.endpoint, data=export(numbers), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=WAIT_S) as answer:
            assert answer.status == 200

    def ctrl_c(self) -> None:
        os.killpg(self.process.pid, signal.SIGINT)

    def exit_code(self) -> int:
        return self.process.wait(timeout=WAIT_S)


@contextmanager
def collect_in_terminal(home: Path, *flags: str) -> Iterator[InTerminal]:
    process = subprocess.Popen(
        [WORKBENCH, "--home", str(home), "collect", "--port", "0", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    with killed_after(process):
        assert process.stdout is not None and process.stderr is not None
        out, err = Lines(process.stdout), Lines(process.stderr)
        ready = out.wait_for(lambda line: line.startswith("collecting "))
        assert ready is not None, err.all()
        endpoint = next(word for word in ready.split() if word.startswith("http://"))
        yield InTerminal(process, out, err, endpoint)


def written(home: Path) -> int:
    return len(list((home / "traces").glob("*.jsonl")))


@pytest.mark.parametrize("stop", ["ctrl-c to the group", "sigterm"])
def test_a_stopped_collector_writes_every_trace_it_answered(tmp_path: Path, stop: str) -> None:
    home = tmp_path / "home"
    with busy_cores(), collect_in_terminal(home) as collect:
        for number in range(1, TRACES + 1):
            collect.post(range(number, number + 1))
        if stop == "sigterm":
            collect.process.send_signal(signal.SIGTERM)
        else:
            collect.ctrl_c()
        code = collect.exit_code()
        lines = collect.err.all()
    assert code == 0 and not any("Traceback" in line for line in lines), lines
    assert collect.out.all()[-1].startswith(f"stopped; {TRACES} run(s) from ")
    assert written(home) == TRACES


def test_a_second_ctrl_c_stops_at_once_and_says_how_many_traces_were_not_written(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    with busy_cores():
        with collect_in_terminal(home, "--max-pending", str(BACKLOG)) as collect:
            for first in range(1, BACKLOG + 1, BATCH):
                collect.post(range(first, first + BATCH))
            collect.ctrl_c()
            waiting = collect.err.wait_for(lambda line: "still waiting" in line)
            collect.ctrl_c()
            code = collect.exit_code()
            lines = collect.err.all()
        said = re.fullmatch(
            r"workbench: writing (\d+) traces still waiting for their root span… "
            r"\(Ctrl-C again stops without them\)",
            waiting or "",
        )
        assert said is not None and 0 < int(said[1]) <= BACKLOG, lines
        assert code == 3 and not any("Traceback" in line for line in lines), lines
        left = BACKLOG - written(home)
        assert 0 < left < BACKLOG
        assert lines[-1] == (
            f"workbench: stopped without writing {left} traces still waiting for their root "
            f"span; their spans stay in {home / 'otel-pending'}, for the next collect"
        ), lines
        # Nothing was lost: the next collect starts with them and writes them when it stops.
        with collect_in_terminal(home, "--max-pending", str(BACKLOG)) as collect:
            collect.process.send_signal(signal.SIGTERM)
            assert collect.exit_code() == 0, collect.err.all()
    assert written(home) == BACKLOG
