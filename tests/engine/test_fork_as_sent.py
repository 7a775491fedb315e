"""A fork re-sends its parent's history as the client sent it: every tool the parent was
offered, and a run that ends as the parent's client ended it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.engine.capture_support import API_KEY, read_run
from workbench.cli import main
from workbench.engine.http.model_server import ModelServer, ScriptResponder
from workbench.engine.http.proxy import RecordingProxy

# A client that offers more tools than the agent core's default cap of 8 (Claude Code: 12).
MANY_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": f"tool_{n}",
            "description": f"Tool number {n}.",
            "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
        },
    }
    for n in range(12)
]


def _captured_many_tools_run(home: Path) -> str:
    steps = [
        {"tool_calls": [{"id": "call_0", "name": "tool_0", "arguments": {"x": "a"}}]},
        {"content": "Done."},
    ]
    with (
        ModelServer(ScriptResponder(steps)) as upstream,
        RecordingProxy(upstream.base_url, home) as proxy,
    ):
        client = openai.OpenAI(base_url=proxy.base_url, api_key=API_KEY, max_retries=0)
        messages: list[Any] = [{"role": "user", "content": "Use the tools."}]
        first = client.chat.completions.create(model="m", messages=messages, tools=MANY_TOOLS)
        message = first.choices[0].message
        messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
        [call] = message.tool_calls or []
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "ok"})
        client.chat.completions.create(model="m", messages=messages, tools=MANY_TOOLS)
        client.close()
    return str(read_run(home)[0]["run_id"])


@pytest.mark.parametrize("turn", [1, 2])
def test_a_fork_of_a_twelve_tool_capture_offers_all_twelve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], turn: int
) -> None:
    home = tmp_path / "home"
    run_id = _captured_many_tools_run(home)
    with ModelServer(ScriptResponder([{"content": "Forked."}])) as server:
        code = main([
            "fork", run_id, "--turn", str(turn), "--base-url", server.base_url, "--model", "m",
            "--api-key", API_KEY, "--home", str(home), "--no-builtin-tools",
        ])  # fmt: skip
        sent = server.bodies
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "left out" not in printed.out + printed.err
    assert [[t["function"]["name"] for t in body["tools"]] for body in sent] == [
        [t["function"]["name"] for t in MANY_TOOLS]
    ]
    [fork_path] = [p for p in (home / "traces").glob("*.jsonl") if p.stem != run_id]
    start = json.loads(fork_path.read_text().splitlines()[0])
    assert (len(start["tools"]), start["tools_dropped"]) == (12, [])
