"""The one server runner behind `workbench proxy`, `serve-model` and `collect`, each run as
the real command in a subprocess: SIGTERM stops each cleanly (one line, exit code 0, what
was open is ended or written), a client that sends its headers and then trickles its body
gets 408 without holding the server, and `--max-request-mb` limits each the same way."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.engine.capture_support import read_run
from tests.support.processes import workbench_process
from workbench.engine.http.model_server import ModelServer, ScriptResponder

OTEL_FIXTURES = Path(__file__).parents[1] / "interop" / "fixtures"
SERVERS = ["proxy", "serve-model", "collect"]
WAIT_S = 30.0


@dataclass
class Running:
    process: subprocess.Popen[str]
    ready: str  # the line the server printed once it was listening
    address: str  # host:port
    post_path: str  # where a request with a body goes
    home: Path

    def post(self, body: bytes, content_type: str = "application/json") -> tuple[int, bytes]:
        request = urllib.request.Request(
            f"http://{self.address}{self.post_path}",
            data=body,
            headers={"Content-Type": content_type, "Authorization": "Bearer k"},
        )
        try:
            with urllib.request.urlopen(request, timeout=WAIT_S) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def stop(self, how: signal.Signals) -> tuple[str, str]:
        self.process.send_signal(how)
        return self.process.communicate(timeout=WAIT_S)


def good_body(server: str, size: int = 0) -> bytes:
    """A request each server answers 200, padded with whitespace to about `size` bytes."""
    if server == "collect":
        document = (OTEL_FIXTURES / "genai-agent.json").read_text(encoding="utf-8")
    else:
        document = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    return document.encode() + b" " * max(0, size - len(document))


@contextmanager
def running(server: str, tmp_path: Path, *flags: str) -> Iterator[Running]:
    home = tmp_path / "home"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"content": "ok"}] * 20}), encoding="utf-8")
    with ModelServer(ScriptResponder([{"content": "ok"}] * 20), keep_requests=False) as upstream:
        command = {
            "proxy": ["proxy", "--upstream", upstream.base_url],
            "serve-model": ["serve-model", "--script", str(script)],
            "collect": ["collect"],
        }[server]
        process = workbench_process("--home", str(home), *command, "--port", "0", *flags)
        try:
            assert process.stdout is not None
            ready = process.stdout.readline()  # blocks until the server is listening
            url = next(word for word in ready.split() if word.startswith("http://"))
            address = url.split("//")[1].split("/")[0]
            path = "/v1/traces" if server == "collect" else "/v1/chat/completions"
            yield Running(process, ready, address, path, home)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()


@pytest.fixture(params=SERVERS)
def server(request: pytest.FixtureRequest) -> str:
    if request.param == "collect":
        pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")
    name: str = request.param
    return name


def test_sigterm_stops_each_server_cleanly(server: str, tmp_path: Path) -> None:
    with running(server, tmp_path) as live:
        if server == "collect":
            # Spans whose root has not come: written as they are when the collector stops.
            document = json.loads(good_body(server))
            spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
            spans[:] = [span for span in spans if span.get("parentSpanId")]
            assert live.post(json.dumps(document).encode()) == (200, b"{}")
        else:
            assert live.post(good_body(server))[0] == 200
        out, err = live.stop(signal.SIGTERM)
    assert live.process.returncode == 0, err
    assert "Traceback" not in err
    last = out.splitlines()[-1]
    if server == "collect":
        assert last.startswith("stopped; 1 run(s) from ")
        assert len(list((live.home / "traces").glob("*.jsonl"))) == 1
    else:
        assert last == "stopped"
    if server == "proxy":  # the run the client left open is ended
        events = read_run(live.home)
        assert events[-1]["type"] == "run_end" and events[-1]["status"] == "completed"


def test_ctrl_c_stops_each_server_the_same_way(server: str, tmp_path: Path) -> None:
    with running(server, tmp_path) as live:
        out, err = live.stop(signal.SIGINT)
    assert live.process.returncode == 0 and "Traceback" not in err, err
    assert out.splitlines()[-1].startswith("stopped")


def _trickle(address: str, path: str) -> socket.socket:
    """A connection that sent its headers and 10 of the 1,000 body bytes it announced."""
    host, port = address.rsplit(":", 1)
    slow = socket.create_connection((host, int(port)), timeout=WAIT_S)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n"
    )
    slow.sendall(head.encode() + b'{"model": ')
    return slow


def _read_to_end(connection: socket.socket) -> bytes:
    answer = b""
    while chunk := connection.recv(65536):
        answer += chunk
    return answer


def test_a_body_that_trickles_gets_408_and_does_not_hold_the_server(
    server: str, tmp_path: Path
) -> None:
    timeout_s = 2.0
    with running(server, tmp_path, "--read-timeout", str(timeout_s)) as live:
        slow = _trickle(live.address, live.post_path)
        started = time.monotonic()
        # Another client is served at once while the slow one still holds its connection.
        assert live.post(good_body(server))[0] == 200
        assert time.monotonic() - started < timeout_s
        answer = _read_to_end(slow)  # the server ends the connection after its answer
        waited = time.monotonic() - started
        slow.close()
        assert live.post(good_body(server))[0] == 200  # and it goes on serving
        _, err = live.stop(signal.SIGTERM)
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.split()[1] == b"408", answer
    assert waited >= timeout_s
    body = json.loads(rest.partition(b"\r\n\r\n")[2])
    message = body["message"] if server == "collect" else body["error"]["message"]
    assert message == f"the request body did not arrive within {timeout_s:g} s; send it at once"
    assert live.process.returncode == 0 and "Traceback" not in err


def test_the_body_limit_flag_works_the_same_for_every_server(server: str, tmp_path: Path) -> None:
    limit = 1024 * 1024
    with running(server, tmp_path, "--max-request-mb", "1") as live:
        # Just under the limit (and over aiohttp's own default of 1 MiB's worth of nothing).
        assert live.post(good_body(server, limit - 100))[0] == 200
        status, answer = live.post(good_body(server, limit + 1))
        live.stop(signal.SIGTERM)
    assert status == 413
    body = json.loads(answer)
    message = body["message"] if server == "collect" else body["error"]["message"]
    assert message == f"request body is larger than the server's limit of {limit} bytes"
