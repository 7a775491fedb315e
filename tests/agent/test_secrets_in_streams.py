"""Secrets across chunk boundaries, in object keys, and through replay: a secret the model
streams back in pieces is redacted in the chunks as in the assembled text, a secret used as
a key is redacted, and a run with redacted secrets replays identically without rebuilding
the key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_core.agent import Agent, AgentConfig
from agent_core.model.scripted import ScriptedModel
from agent_core.tools.builtin import builtin_tools
from traces.events import ModelChunk, ModelResponse, ToolStart
from traces.reader import read_trace
from traces.redact import ChunkStream, Redactor
from traces.writer import JsonlWriter

SECRET = "sk-test-STREAMED0123456789abcdef"
CLI = "import sys; from workbench.cli import main; sys.exit(main())"


def deltas(chunks: list[ModelChunk], key: str = "content") -> str:
    out = []
    for chunk in chunks:
        for choice in chunk.data.get("choices") or []:
            delta = choice.get("delta") or {}
            if key == "arguments":
                for call in delta.get("tool_calls") or []:
                    out.append((call.get("function") or {}).get("arguments") or "")
            elif isinstance(delta.get(key), str):
                out.append(delta[key])
    return "".join(out)


@pytest.mark.parametrize("chunk_size", [1, 3, 7, 24])
async def test_a_secret_split_over_chunks_is_redacted_in_them(
    tmp_path: Path, chunk_size: int
) -> None:
    steps: list[dict[str, Any]] = [
        {
            "content": f"Your key is {SECRET}, twice: {SECRET}.",
            "tool_calls": [{"name": "calculator", "arguments": {"expression": "1+1"}}],
            "chunk_size": chunk_size,
        },
        {"content": f"Done with {SECRET}", "chunk_size": chunk_size},
    ]
    config = AgentConfig(task="echo it")
    writer = JsonlWriter(tmp_path, config.run_id, Redactor([SECRET]))
    agent = Agent(ScriptedModel(steps), [builtin_tools(tmp_path)], config, sinks=[writer])
    await agent.run()
    writer.close()
    assert SECRET[4:12] not in writer.path.read_text()  # no piece of it either
    events = read_trace(writer.path).events
    for turn in (1, 2):
        chunks = [e for e in events if isinstance(e, ModelChunk) and e.turn == turn]
        (response,) = [e for e in events if isinstance(e, ModelResponse) and e.turn == turn]
        assert deltas(chunks) == response.message["content"]
        assert "[REDACTED:api_key]" in deltas(chunks)


def test_a_secret_split_over_tool_call_arguments_is_redacted() -> None:
    redactor = Redactor([SECRET])
    stream: ChunkStream[int] = ChunkStream(redactor)
    pieces = ['{"token": "', SECRET[:9], SECRET[9:20], SECRET[20:] + '"}']
    out: list[tuple[int, dict[str, Any]]] = []
    for number, piece in enumerate(pieces):
        call = {"index": 0, "function": {"arguments": piece}}
        out += stream.push(number, {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    out += stream.flush()
    assert [number for number, _ in out] == [0, 1, 2, 3]  # every chunk, in order
    text = "".join(
        d["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for _, d in out
    )
    assert text == '{"token": "[REDACTED:api_key]"}' == redactor.text(f'{{"token": "{SECRET}"}}')


async def test_a_secret_used_as_an_object_key_is_redacted(tmp_path: Path) -> None:
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "calculator", "arguments": {SECRET: "1+1"}}]},
        {"content": "ok"},
    ]
    config = AgentConfig(task="t")
    writer = JsonlWriter(tmp_path, config.run_id, Redactor([SECRET]))
    agent = Agent(ScriptedModel(steps), [builtin_tools(tmp_path)], config, sinks=[writer])
    await agent.run()
    writer.close()
    assert SECRET not in writer.path.read_text()
    (start,) = [e for e in read_trace(writer.path).events if isinstance(e, ToolStart)]
    assert start.arguments == {"[REDACTED:api_key]": "1+1"}


@pytest.mark.parametrize(
    ("task", "answer"),
    [
        (f"my key is {SECRET}, keep it", "Noted."),  # a secret in what the model is sent
        ("what is my key?", f"Your key is {SECRET}, keep it safe."),  # echoed in chunks
    ],
)
def test_runs_with_redacted_secrets_replay_without_the_key(
    tmp_path: Path, task: str, answer: str
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"content": answer, "chunk_size": 5}]}))
    home = tmp_path / "home"

    def workbench(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", CLI, "--home", str(home), *argv],
            capture_output=True,
            text=True,
            timeout=120,
        )

    run = workbench("run", task, "--script", str(script), "--api-key", SECRET, "--json")
    assert run.returncode == 0, run.stderr
    (trace,) = (home / "traces").glob("*.jsonl")
    replay = workbench("replay", trace.stem)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "identical" in replay.stdout
    assert SECRET not in replay.stdout + replay.stderr
