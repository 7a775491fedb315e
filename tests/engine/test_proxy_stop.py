"""Stopping `workbench proxy` the ways people do, with every core busy: Ctrl-C in a
terminal (SIGINT to the whole process group), SIGTERM from a service manager, and a second
Ctrl-C from someone who will not wait. Every exchange a client was answered is recorded
before the proxy exits 0, whatever the recording process was doing; a second Ctrl-C stops
at once and says how many were not, exit non-zero.

The recording process is held stopped (SIGSTOP) from its start-up on while the clients are
answered, so its backlog is the same on any machine: all of it. The proxy's stdout and
stderr are pipes, read line by line as they come.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.engine.capture_support import runs
from tests.support.busy import busy_cores
from tests.support.processes import WAIT_S, WORKBENCH, Lines, file_size_limit
from tests.support.servers import text_chunks
from workbench.engine.http.model_server import ModelServer, Reply

EXCHANGES = 12
HOLD_ON = "hold on"
STALLED_KEY = "sk-stalled-0123456789abcdef"  # a key no chunk's text has a piece of

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")


@dataclass
class InTerminal:
    """The proxy as a terminal runs it: a process group of its own, Ctrl-C to the group."""

    process: subprocess.Popen[str]
    out: Lines
    err: Lines
    url: str
    recorder: int  # the recording process's pid

    def ctrl_c(self) -> None:
        os.killpg(self.process.pid, signal.SIGINT)

    def exit_code(self) -> int:
        return self.process.wait(timeout=WAIT_S)


def recording_process(parent: int) -> int:
    """The pid of the proxy's recording process (a child of the proxy)."""
    for task in Path(f"/proc/{parent}/task").iterdir():
        for child in (task / "children").read_text().split():
            command = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"workbench.engine.http.recording" in command:
                return int(child)
    raise AssertionError("the proxy has no recording process")


@contextmanager
def proxy_in_terminal(home: Path, *, held: bool = True, workers: int = 1) -> Iterator[InTerminal]:
    """A proxy (forwarding on `workers` processes) in front of a model that answers every
    request (but those that ask it to hold on: their streams stall after two chunks), every
    core kept busy; its recording process held stopped from its start-up on, unless not
    `held`."""
    reply = Reply(chunks=text_chunks("hello there"))
    stalled = Reply(chunks=text_chunks("hello there"), stall_after=2)

    def answer(body: dict[str, Any]) -> Reply:
        return stalled if body["messages"][0]["content"].startswith(HOLD_ON) else reply

    with busy_cores(), ModelServer(answer, keep_requests=False) as upstream:
        argv = [WORKBENCH, "proxy", "--upstream", upstream.base_url, "--home", str(home)]
        process = subprocess.Popen(
            [*argv, "--workers", str(workers)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        recorder = None
        try:
            assert process.stdout is not None and process.stderr is not None
            out, err = Lines(process.stdout), Lines(process.stderr)
            ready = out.wait_for(lambda line: line.startswith("proxying "))
            assert ready is not None, err.all()
            recorder = recording_process(process.pid)
            if held:
                os.kill(recorder, signal.SIGSTOP)
            yield InTerminal(process, out, err, ready.split()[1], recorder)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)  # its workers too
                process.wait()
            if recorder is not None:
                with suppress(ProcessLookupError):
                    os.kill(recorder, signal.SIGKILL)


def answer_clients(url: str) -> None:
    """EXCHANGES one-turn conversations, every other one streamed, each answered in full."""
    client = openai.OpenAI(base_url=url, api_key="k", max_retries=0, timeout=WAIT_S)
    for i in range(EXCHANGES):
        messages: list[openai.types.chat.ChatCompletionMessageParam] = [
            {"role": "user", "content": f"question {i}"}
        ]
        if i % 2:
            stream = client.chat.completions.create(model="m", messages=messages, stream=True)
            assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        else:
            answer = client.chat.completions.create(model="m", messages=messages)
            assert answer.choices[0].message.content == "hello there"
    client.close()


def answer_each_on_its_own(url: str) -> None:
    """EXCHANGES one-turn conversations as `answer_clients`, each on a client (and so a
    connection) of its own."""
    for i in range(EXCHANGES):
        with openai.OpenAI(base_url=url, api_key="k", max_retries=0, timeout=WAIT_S) as client:
            messages: list[openai.types.chat.ChatCompletionMessageParam] = [
                {"role": "user", "content": f"question {i}"}
            ]
            answer = client.chat.completions.create(model="m", messages=messages)
            assert answer.choices[0].message.content == "hello there"


def completed_runs(home: Path) -> int:
    return sum(events[-1]["type"] == "run_end" for events in runs(home))


def resume(pid: int) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGCONT)


@pytest.mark.parametrize("stop", ["ctrl-c to the group", "sigterm"])
def test_a_stopped_proxy_records_every_answered_exchange_before_it_exits(
    tmp_path: Path, stop: str
) -> None:
    home = tmp_path / "home"
    with proxy_in_terminal(home) as proxy:
        answer_clients(proxy.url)
        # Recording has fallen behind: said once, soon enough.
        behind = proxy.err.wait_for(lambda line: "behind forwarding" in line)
        if stop == "sigterm":
            proxy.process.send_signal(signal.SIGTERM)
        else:
            proxy.ctrl_c()
        queued = proxy.err.wait_for(lambda line: "still queued" in line)
        resume(proxy.recorder)  # the machine has time for recording again
        code = proxy.exit_code()
        err = proxy.err.all()
    assert queued == (
        f"workbench proxy: recording {EXCHANGES} exchanges still queued… "
        "(Ctrl-C again stops without them)"
    ), err
    assert err[-1] == f"workbench proxy: done: {EXCHANGES} exchanges recorded", err
    assert behind is not None and behind.startswith(
        f"workbench proxy: recording is {EXCHANGES} exchanges ("
    ), err
    assert sum("behind forwarding" in line for line in err) == 1
    assert code == 0 and not any("Traceback" in line for line in err), err
    assert proxy.out.all()[-1] == "stopped"
    assert completed_runs(home) == EXCHANGES


@pytest.mark.parametrize("workers", [1, 3])
def test_a_second_ctrl_c_stops_at_once_and_says_what_was_not_recorded(
    tmp_path: Path, workers: int
) -> None:
    """Also with workers (tests/engine/test_proxy_workers.py): each exchange on a connection
    of its own, so that they reach every process; what the workers sent counts too."""
    home = tmp_path / "home"
    with proxy_in_terminal(home, workers=workers) as proxy:
        if workers == 1:
            answer_clients(proxy.url)
        else:
            answer_each_on_its_own(proxy.url)
        proxy.ctrl_c()
        assert proxy.err.wait_for(lambda line: "still queued" in line), proxy.err.all()
        proxy.ctrl_c()  # the recording process is still held: nothing more gets recorded
        code = proxy.exit_code()
        err = proxy.err.all()
    assert code != 0, err
    assert err[-1] == (
        f"workbench proxy: stopped without recording {EXCHANGES} exchanges "
        "(not yet sorted into runs)"
    ), err
    assert not any("Traceback" in line for line in err), err


def begun_runs(home: Path, count: int) -> list[str]:
    """The runs of the first `count` exchanges whose answer the recording process has begun
    to record: two chunks of each written (the recording process tells the proxy which run
    an exchange went into before it records a second chunk). Nothing announces the writing
    of a trace, so its folder is looked at until then, with a deadline for a hang."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        found = []
        for path in (home / "traces").glob("*.jsonl"):
            whole = path.read_text().rpartition("\n")[0]
            if whole.count('"type":"model_chunk"') >= 2:
                found.append(path.stem)
        if len(found) >= count:
            return sorted(found)
        time.sleep(0.05)
    raise AssertionError(f"{count} runs were not begun in {WAIT_S:.0f} s")


def test_a_second_ctrl_c_names_the_runs_it_left_unrecorded(tmp_path: Path) -> None:
    """Two clients' streams, stalled mid-answer, are being recorded in runs of their own
    when the recording process freezes; a dozen clients are answered after that. A second
    Ctrl-C names the two runs and counts the exchanges not yet sorted into any."""
    home = tmp_path / "home"
    with proxy_in_terminal(home, held=False) as proxy:
        client = openai.OpenAI(
            base_url=proxy.url, api_key=STALLED_KEY, max_retries=0, timeout=WAIT_S
        )
        streams = [
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"{HOLD_ON} {i}"}], stream=True
            )
            for i in range(2)
        ]
        stalled = begun_runs(home, 2)
        os.kill(proxy.recorder, signal.SIGSTOP)
        answer_clients(proxy.url)
        proxy.ctrl_c()
        assert proxy.err.wait_for(lambda line: "still queued" in line), proxy.err.all()
        proxy.ctrl_c()
        code = proxy.exit_code()
        err = proxy.err.all()
        for stream in streams:
            stream.close()
        client.close()
    assert code != 0, err
    assert err[-1] == (
        f"workbench proxy: stopped without recording {EXCHANGES + 2} exchanges "
        f"(runs {stalled[0]}, {stalled[1]}, and {EXCHANGES} not yet sorted into runs)"
    ), err
    assert not any("Traceback" in line for line in err), err


def test_a_full_disk_names_the_runs_it_cut_once_and_exits_non_zero(tmp_path: Path) -> None:
    """The disk is full from the start (a file size limit of 0 on the proxy and the process
    it records in, as tests/agent/test_disk_full.py does): one line names the first run cut
    as it happens, one at the end names them all, not a line per run."""
    home = tmp_path / "home"
    reply = Reply(chunks=text_chunks("hello there"))
    with ModelServer(lambda body: reply, keep_requests=False) as upstream:
        process = subprocess.Popen(
            [WORKBENCH, "proxy", "--upstream", upstream.base_url, "--home", str(home)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=file_size_limit(0),
        )
        try:
            assert process.stdout is not None and process.stderr is not None
            out, err = Lines(process.stdout), Lines(process.stderr)
            ready = out.wait_for(lambda line: line.startswith("proxying "))
            assert ready is not None, err.all()
            answer_clients(ready.split()[1])
            assert err.wait_for(lambda line: "could not be written whole" in line), err.all()
            process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=WAIT_S)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    lines = err.all()
    run_ids = sorted(path.stem for path in (home / "traces").glob("*.jsonl"))
    assert len(run_ids) == EXCHANGES
    assert code == 3 and len(lines) == 2 and "Traceback" not in "".join(lines), lines
    first, last = lines
    assert first.startswith("workbench proxy: the trace of run ")
    assert "could not be written whole (" in first and "free some space" in first
    assert first.split()[6] in run_ids
    assert last.startswith("workbench proxy: runs ") and last.endswith(
        f" and {EXCHANGES - 10} more could not be written whole"
    )
    assert sum(run_id in last for run_id in run_ids) == 10
