"""The real Claude Code CLI, its telemetry on, answering one task headless against the
local model server (which it reaches as Anthropic's Messages API) and exporting its
events and metrics over OTLP/HTTP JSON to `workbench collect`.

Opt-in: set WORKBENCH_CLAUDE_CODE to the `claude` executable (`npm install
@anthropic-ai/claude-code`); skipped otherwise. tests/fixtures/otlp/claude-code.jsonl was
recorded this way (the user id blanked, the folder renamed).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")

from tests.interop.test_collect_signals import check_claude_code_run
from tests.support.servers import completion
from workbench.engine.http.model_server import ModelServer, Reply
from workbench.engine.otel.collect import Collector

CLAUDE = os.environ.get("WORKBENCH_CLAUDE_CODE")
CLAUDE_FLAGS = ["--model", "claude-sonnet-4-5", "--allowedTools", "Read"]
pytestmark = pytest.mark.skipif(
    not CLAUDE, reason="set WORKBENCH_CLAUDE_CODE to a Claude Code `claude` executable"
)


def _completion(message: dict[str, Any], finish: str, usage: tuple[int, int]) -> Reply:
    return completion(message, finish, usage, model="claude-sonnet-4-5")


def test_claude_code_telemetry_from_the_real_cli_becomes_a_run(
    wb_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("one\ntwo\nthree\n", encoding="utf-8")

    def responder(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        if any(m.get("role") == "tool" for m in messages):
            return _completion(
                {"role": "assistant", "content": "notes.txt has 3 lines."}, "stop", (90, 9)
            )
        arguments = json.dumps({"file_path": str(notes)})
        call: dict[str, Any] = {"id": "toolu_01", "type": "function"}
        call["function"] = {"name": "Read", "arguments": arguments}
        ask = {"role": "assistant", "content": None, "tool_calls": [call]}
        return _completion(ask, "tool_calls", (61, 17))

    home = tmp_path / "user-home"
    home.mkdir()
    with ModelServer(responder) as server, Collector(wb_home) as collector:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "CLAUDE", "OTEL"))
        }
        env |= {
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": server.base_url.removesuffix("/v1"),
            "ANTHROPIC_API_KEY": "sk-ant-test-not-real",
            "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
            "OTEL_LOGS_EXPORTER": "otlp",
            "OTEL_METRICS_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.base_url,
            "OTEL_LOG_USER_PROMPTS": "1",
            "OTEL_LOG_TOOL_DETAILS": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        done = subprocess.run(
            [str(CLAUDE), "-p", "How many lines does notes.txt have?", *CLAUDE_FLAGS],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "notes.txt has 3 lines." in done.stdout
    # Claude Code exports what it has as it exits; the run is written when collect stops.
    (run,) = collector.receiver.runs
    assert collector.receiver.metric_points > 0
    check_claude_code_run(run.path, capsys, notes=str(notes))
