"""`workbench proxy` records a streamed answer when it is whole for the client: at `[DONE]`
(or once a chunk has carried a finish reason), not when the upstream closes the stream."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.engine.capture_support import STEPS, read_run, run_agent, runs
from tests.engine.test_serve_model import serve
from tests.support.processes import WORKBENCH
from tests.support.servers import Sequence, hang_up_after_first_chunk, recording_proxy, text_chunks
from tests.support.streams import load_stream, stream_files, stream_reply
from workbench.engine.http.model_server import ModelServer, Reply, ScriptResponder


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
    with recording_proxy(HeldOpen(STEPS), home) as (_, proxy):
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


def _ends_with_done(name: str) -> bool:
    _, lines = load_stream(name)
    return any(isinstance(line, str) and line.replace(" ", "") == "data:[DONE]" for line in lines)


DONE_STREAMS = [path.name for path in stream_files() if _ends_with_done(path.name)]


@pytest.mark.parametrize("name", DONE_STREAMS)
def test_real_streams_held_open_after_done_are_recorded_whole(tmp_path: Path, name: str) -> None:
    reply = stream_reply(name)
    assert reply.chunks is not None
    reply.stall_after = len(reply.chunks)  # then silent, the stream still open
    home = tmp_path / "home"
    with recording_proxy(lambda body: reply, home) as (_, proxy):
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}], stream=True
        )
        received = list(stream)  # the SDK stops at `[DONE]` and closes the connection
        client.close()
    events = read_run(home)
    sent = [line for line in reply.chunks if isinstance(line, dict)]
    assert [e["data"] for e in events if e["type"] == "model_chunk"] == sent
    (response,) = [e for e in events if e["type"] == "model_response"]
    assert response["chunks"] == len(sent) >= len(received)
    # Ended by the proxy's stop: completed, or waiting for tool results (then cancelled).
    assert events[-1]["type"] == "run_end"


def test_an_answer_is_whole_once_a_chunk_carried_its_finish_reason(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # No `[DONE]`: a client that stops at the finish reason had the whole answer.
    chunks: list[dict[str, Any] | str] = [
        c for c in text_chunks("All done here.") if c != "data: [DONE]"
    ]
    held = Reply(chunks=chunks, stall_after=len(chunks))
    home = tmp_path / "home"
    with recording_proxy(Sequence(held, Reply(chunks=text_chunks("ok"))), home) as (
        _,
        proxy,
    ):
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "finish"}], stream=True
        )
        text = ""
        for chunk in stream:
            text += chunk.choices[0].delta.content or ""
            if chunk.choices[0].finish_reason:
                break
        stream.close()
        # A whole exchange after the hang-up: the proxy has seen the hang-up by its end.
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        client.close()
    assert text == "All done here."
    first = runs(home)[0]
    assert first[-1]["type"] == "run_end" and first[-1]["status"] == "completed"
    assert first[-1]["final_answer"] == text
    assert "workbench proxy:" not in capfd.readouterr().err


def test_a_capture_left_incomplete_says_so_naming_its_run(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    stalled = Reply(chunks=text_chunks("one two three four"), stall_after=2)
    with recording_proxy(Sequence(stalled, Reply(chunks=text_chunks("done"))), home) as (
        _,
        proxy,
    ):
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        hang_up_after_first_chunk(client)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        client.close()
    first = runs(home)[0]
    assert "run_end" not in [e["type"] for e in first]
    err = capfd.readouterr().err
    assert err == (
        f"workbench proxy: run {first[0]['run_id']} stays incomplete: the client went away "
        "before the answer of turn 1 was whole\n"
    )


ESCAPES = [
    "GET /v1/../x",
    "GET /v1/%2e%2e/x",
    "GET /v1/%2E%2E/%2e%2e/x",
    "GET /v1/..%2fx",
    "GET /v1/%252e%252e/x",
    "GET /v1/models/..%5c..%5cx",
    "POST /v1/x/../chat/completions",
]


@pytest.mark.parametrize("request_line", ESCAPES)
async def test_a_path_that_leaves_the_base_path_is_refused(
    tmp_path: Path, request_line: str
) -> None:
    from tests.engine.test_serve_hardening import exchange

    with recording_proxy(ScriptResponder([]), tmp_path / "home") as (upstream, proxy):
        head = f"{request_line} HTTP/1.1\nHost: localhost\nConnection: close\nContent-Length: 2\n"
        status, body = await exchange(proxy.base_url, head, b"{}")
        # Inside the base path, dots and all, is still passed through.
        inside, _ = await exchange(
            proxy.base_url, head.replace(request_line, "GET /v1/./models"), b"{}"
        )
        assert upstream.requests == []  # it records every path but /v1/models
    assert (status, inside) == (400, 200)
    message = json.loads(body)["error"]["message"]
    assert "'..' segment, which would leave the upstream's base path" in message


def _peak_rss_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/<pid>/status")
def test_a_long_stream_passes_through_in_bounded_memory(tmp_path: Path) -> None:
    # 32 MB of chunks, most of it in each chunk's `obfuscation` padding (as OpenAI sends).
    count, padding = 8000, "p" * 4000

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "big", "choices": [choice], "obfuscation": padding}

    chunks: list[dict[str, Any] | str] = [chunk({"content": "w "}) for _ in range(count)]
    chunks += [chunk({}, "stop"), "data: [DONE]"]
    home = tmp_path / "home"
    answers = Sequence(Reply(chunks=text_chunks("warm")), Reply(chunks=chunks))
    with ModelServer(answers, keep_requests=False) as upstream:
        process = subprocess.Popen(
            [WORKBENCH, "proxy", "--upstream", upstream.base_url, "--home", str(home)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            base_url = process.stdout.readline().split()[1]
            client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)
            ask: Any = [{"role": "user", "content": "long"}]
            list(client.chat.completions.create(model="m", messages=ask, stream=True))
            before = _peak_rss_kb(process.pid)
            stream = client.chat.completions.create(model="m", messages=ask, stream=True)
            received = sum(1 for _ in stream)
            after = _peak_rss_kb(process.pid)
            client.close()
        finally:
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=60)
    assert process.returncode == 0 and "Traceback" not in err
    assert received == count + 1
    # Far less than the stream: it was never held whole, before or after its end.
    assert (after - before) < 16 * 1024, (before, after)
    big = max(runs(home), key=len)
    assert sum(1 for e in big if e["type"] == "model_chunk") == count + 1
    assert big[-1]["type"] == "run_end" and big[-1]["status"] == "completed"
