"""Traces of the sizes users reach, generated in the test (never committed): a long run of
the workbench's own agent on a model script, runs with multi-MB lines, and homes of many
small runs (a run with one huge line: `generated_runs.run_with_big_result`)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from agent_core.agent import Agent, AgentConfig
from agent_core.model.scripted import ScriptedModel
from agent_core.tools.builtin import builtin_tools
from traces.events import Limits
from traces.versions import SCHEMA_VERSION
from traces.writer import JsonlWriter

_WORDS = [
    "trace",
    "replay",
    "fork",
    "turn",
    "model",
    "tool",
    "answer",
    "history",
    "budget",
    "stream",
    "chunk",
    "call",
]
MIB = 1 << 20


def words(count: int, seed: int) -> str:
    pick = random.Random(seed).choice
    return " ".join(pick(_WORDS) for _ in range(count))


def long_agent_run(
    folder: Path,
    run_id: str,
    turns: int = 90,
    words_per_turn: int = 480,
    context_window: int = 10**8,
) -> Path:
    """A run of the real loop on a model script: `turns` turns, each answering about
    `words_per_turn` words and calling the calculator, streamed in chunks, so the trace
    grows as a real long run's does (every request resends the history, trimmed to
    `context_window` tokens)."""
    steps: list[dict[str, object]] = [
        {
            "content": words(words_per_turn, turn),
            "tool_calls": [{"name": "calculator", "arguments": {"expression": f"{turn} * 3"}}],
        }
        for turn in range(1, turns)
    ]
    steps.append({"content": "All steps done."})
    config = AgentConfig(
        task="Work through every step.",
        run_id=run_id,
        limits=Limits(max_turns=turns + 1, token_budget=10**9, context_window=context_window),
    )
    agent = Agent(
        ScriptedModel(steps), [builtin_tools(folder)], config, sinks=[JsonlWriter(folder, run_id)]
    )

    async def drive() -> None:
        async for _ in agent.run_stream():
            pass

    asyncio.run(drive())
    assert agent.result is not None and agent.result.status == "completed", agent.result
    return folder / f"{run_id}.jsonl"


def small_run_lines(run_id: str) -> bytes:
    """The lines of a small completed run, as the writer writes them."""
    return (
        f'{{"run_id":"{run_id}","seq":0,"ts":"2026-01-01T00:00:00.000000Z","type":"run_start",'
        f'"turn":null,"schema_version":{SCHEMA_VERSION},"task":"t","model":"m"}}\n'
        f'{{"run_id":"{run_id}","seq":1,"ts":"2026-01-01T00:00:01.000000Z","type":"run_end",'
        f'"turn":null,"status":"completed"}}\n'
    ).encode()
