"""Export into a real Arize Phoenix and read the spans back through Phoenix's own client.

Phoenix is heavy and not a dependency: this test runs only where it finds a `phoenix`
command (`$WORKBENCH_PHOENIX`, else on PATH) and `arize-phoenix-client` is installed.
See docs/otel.md "Tests":

    python -m venv /tmp/phoenix && /tmp/phoenix/bin/pip install arize-phoenix
    .venv/bin/pip install arize-phoenix-client
    export WORKBENCH_PHOENIX=/tmp/phoenix/bin/phoenix
    .venv/bin/python -m pytest -m phoenix_server tests/interop
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from traces.events import ModelResponse, RunEnd, RunStart, ToolStart
from traces.reader import read_trace
from workbench.cli import main

pytestmark = pytest.mark.phoenix_server  # `phoenix` is arize-phoenix-client's own marker

PHOENIX = os.environ.get("WORKBENCH_PHOENIX") or shutil.which("phoenix")
if PHOENIX is None:
    pytest.skip(
        "Arize Phoenix is not installed: pip install arize-phoenix (any venv) and set "
        "WORKBENCH_PHOENIX=/path/to/phoenix (docs/otel.md)",
        allow_module_level=True,
    )
pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")
pytest.importorskip("phoenix.client", reason="needs arize-phoenix-client in the venv")

STARTED = "Application startup complete"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def phoenix_url(tmp_path: Path) -> Iterator[str]:
    """A Phoenix server on its own ports and working folder, until the test ends."""
    port = _free_port()
    env = os.environ | {
        "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix"),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
    }
    assert PHOENIX is not None
    process = subprocess.Popen(
        [PHOENIX, "serve"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    ready = threading.Event()
    output: list[str] = []

    def watch() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            if STARTED in line:
                ready.set()
        ready.set()  # it exited: the test reports what it said

    threading.Thread(target=watch, daemon=True).start()
    try:
        assert ready.wait(180) and process.poll() is None, "".join(output[-20:])
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _spans_when_stored(url: str, count: int) -> list[dict[str, Any]]:
    """Phoenix stores received spans in batches in the background: ask until all are in."""
    from phoenix.client import Client

    client = Client(base_url=url)
    deadline = time.monotonic() + 60
    while True:
        spans = client.spans.get_spans(project_identifier="default", limit=10_000)
        if len(spans) >= count or time.monotonic() > deadline:
            return [dict(span) for span in spans]
        time.sleep(0.5)


def test_runs_appear_in_phoenix_with_the_right_span_tree(
    golden_home: Path, golden_dir: Path, phoenix_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export-otel", "--all", "--endpoint", phoenix_url, "--json"]) == 0
    import json

    sent = json.loads(capsys.readouterr().out)["spans"]
    spans = _spans_when_stored(phoenix_url, sent)
    assert len(spans) == sent

    by_run: dict[str, list[dict[str, Any]]] = {}
    roots = [s for s in spans if s["parent_id"] is None]
    assert len(roots) == 8  # one trace per run
    for root in roots:
        trace_id = root["context"]["trace_id"]
        run_id = root["attributes"]["workbench.run_id"]
        by_run[run_id] = [s for s in spans if s["context"]["trace_id"] == trace_id]

    for path in golden_dir.glob("*.jsonl"):
        events = read_trace(path).events
        start = next(e for e in events if isinstance(e, RunStart))
        end = next((e for e in events if isinstance(e, RunEnd)), None)
        trace = by_run[start.run_id]
        root = next(s for s in trace if s["parent_id"] is None)
        assert root["span_kind"] == "AGENT"
        expected_status = "UNSET" if end is None else "OK" if end.status == "completed" else "ERROR"
        assert root["status_code"] == expected_status
        children = sorted(
            (s for s in trace if s is not root), key=lambda s: s["attributes"]["workbench.seq"]
        )
        assert {s["parent_id"] for s in children} <= {root["context"]["span_id"]}
        tools = [s for s in children if s["span_kind"] == "TOOL"]
        assert [s["attributes"]["tool.name"] for s in tools] == [
            e.name for e in events if isinstance(e, ToolStart)
        ]
        llms = [s for s in children if s["span_kind"] == "LLM"]
        answered = [
            s for s in llms if s["status_code"] != "ERROR" and "output.value" in s["attributes"]
        ]
        responses = [e for e in events if isinstance(e, ModelResponse)]
        assert len(answered) == len(responses)
        for span, response in zip(answered, responses, strict=True):
            usage = response.usage or {}
            if usage:
                assert span["attributes"]["llm.token_count.prompt"] == usage["prompt_tokens"]
                assert (
                    span["attributes"]["llm.token_count.completion"] == usage["completion_tokens"]
                )
