"""The Vercel AI SDK in Node, with its default OpenAI provider (`@ai-sdk/openai`, which speaks
the Responses API), recorded through `workbench proxy` and then replayed offline.

The agent (tests/engine/node/ai_sdk_agent.mjs) reads config.toml and multiplies, calling both
tools at once, against the local scripted model; the capture must be one completed run of
Responses API calls with both tool calls observed and their results, hold no key anywhere
in the home, and serve the same agent offline through `workbench serve-model --replay` to
the same final answer. The SDK is installed into node_modules by
scripts/install-mcp-servers.sh (scripts/test.sh runs it); without it the test is skipped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.engine.capture_support import (
    API_KEY,
    STEPS,
    SYSTEM,
    TASK,
    assert_no_key_in,
    read_run,
)
from tests.engine.test_serve_model import serve
from tests.support.servers import recording_proxy
from workbench.engine.http.model_server import ScriptResponder

ROOT = Path(__file__).parents[2]
AGENT = Path(__file__).parent / "node" / "ai_sdk_agent.mjs"
NODE = shutil.which("node")
INSTALLED = (ROOT / "node_modules" / "@ai-sdk" / "openai" / "package.json").is_file()

pytestmark = pytest.mark.skipif(
    NODE is None or not INSTALLED,
    reason="needs node and the AI SDK in node_modules (bash scripts/install-mcp-servers.sh)",
)


def ai_sdk_agent(base_url: str, *, stream: bool) -> str:
    assert NODE is not None
    done = subprocess.run(
        [NODE, str(AGENT), base_url, API_KEY, SYSTEM, TASK, "stream" if stream else "whole"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return str(json.loads(done.stdout)["text"])


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_the_ai_sdk_default_provider_is_captured_and_replays_offline(
    tmp_path: Path, stream: bool
) -> None:
    home = tmp_path / "home"
    with recording_proxy(ScriptResponder(STEPS, model="demo-model"), home) as (upstream, proxy):
        answer = ai_sdk_agent(proxy.base_url, stream=stream)
        sent = upstream.requests
    assert answer == STEPS[1]["content"]
    assert [r.path for r in sent] == ["/v1/responses", "/v1/responses"]

    events = read_run(home)
    start, end = events[0], events[-1]
    assert (start["origin"], start["task"], start["system_prompt"]) == ("captured", TASK, SYSTEM)
    assert {t["function"]["name"] for t in start["tools"]} == {"read_file", "calculator"}
    assert (end["status"], end["final_answer"]) == ("completed", answer)
    requests = [e for e in events if e["type"] == "model_request"]
    assert [(r["turn"], r["api"], r["stream"]) for r in requests] == [
        (1, "responses", stream),
        (2, "responses", stream),
    ]
    starts = [e for e in events if e["type"] == "tool_start"]
    assert [(e["name"], e["arguments"]) for e in starts] == [
        ("read_file", {"path": "config.toml"}),
        ("calculator", {"expression": "8080 * 2"}),
    ]
    ends = [e for e in events if e["type"] == "tool_end"]
    assert [(e["call_id"], e["ok"], e["observed"]) for e in ends] == [
        ("call_read", True, True),
        ("call_calc", True, True),
    ]
    assert "port = 8080" in ends[0]["result"] and ends[1]["result"] == "16160"
    assert_no_key_in(home, API_KEY)

    with serve("--replay", start["run_id"], "--home", str(home)) as base_url:
        assert ai_sdk_agent(base_url, stream=stream) == answer
