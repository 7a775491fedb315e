"""Tracing overhead: a 100-turn agent run on the in-process scripted model, traced to JSONL
versus not traced, in the same process.

    .venv/bin/python bench/overhead.py [--turns 100] [--repeats 7]

"Traced" is what `workbench run` does: every event goes through the redacting JSONL writer,
appended and flushed per event. "Not traced" runs the same loop with no sink (the events
are still built, because the loop streams them to its caller). Prints the best-of-N wall
time of each, their ratio (target <= 1.3) and the tracing cost per event (target <= 100 µs);
the median ratio of the interleaved pairs is printed too, as a check on a noisy machine.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent_core.agent import Agent, AgentConfig  # noqa: E402
from agent_core.model.scripted import ScriptedModel  # noqa: E402
from agent_core.tools.builtin import builtin_tools  # noqa: E402
from traces.events import Limits  # noqa: E402
from traces.redact import Redactor  # noqa: E402
from traces.writer import JsonlWriter  # noqa: E402


def script(turns: int) -> list[dict[str, object]]:
    steps: list[dict[str, object]] = [
        {
            "content": f"Step {n}: computing.",
            "tool_calls": [{"name": "calculator", "arguments": {"expression": f"{n} * 3 + 1"}}],
        }
        for n in range(1, turns)
    ]
    steps.append({"content": "All steps done."})
    return steps


async def one_run(turns: int, folder: Path | None) -> tuple[float, int]:
    """Wall seconds and events for one run; traced to `folder` when given."""
    config = AgentConfig(
        task="Compute every step.",
        # The history grows for 100 turns; keep budget and window out of the way.
        limits=Limits(max_turns=turns + 1, token_budget=10**9, context_window=10**7),
    )
    sinks = [JsonlWriter(folder, config.run_id, Redactor(["sk-bench-secret"]))] if folder else []
    agent = Agent(ScriptedModel(script(turns)), [builtin_tools(ROOT)], config, sinks=sinks)
    events = 0
    started = time.perf_counter()
    async for item in agent.run_stream():
        events += hasattr(item, "seq")
    elapsed = time.perf_counter() - started
    assert agent.result is not None and agent.result.status == "completed", agent.result
    return elapsed, events


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    off: list[float] = []
    on: list[float] = []
    events = 0
    with tempfile.TemporaryDirectory() as scratch:
        asyncio.run(one_run(args.turns, None))  # warm-up: imports, caches
        for _ in range(args.repeats):  # interleaved, so drift hits both sides alike
            seconds, _ = asyncio.run(one_run(args.turns, None))
            off.append(seconds)
            seconds, events = asyncio.run(one_run(args.turns, Path(scratch)))
            on.append(seconds)
    best_off, best_on = min(off), min(on)
    ratio = best_on / best_off
    per_event_us = (best_on - best_off) / events * 1e6
    print(f"run: {args.turns} turns, {events:,} events, best of {args.repeats}")
    print(f"not traced: {best_off * 1000:8.1f} ms")
    print(f"traced:     {best_on * 1000:8.1f} ms")
    print(f"ratio traced/not traced: {ratio:.2f}   (target <= 1.3)")
    print(f"tracing cost per event:  {per_event_us:.1f} µs   (target <= 100 µs)")
    pairs = sorted(traced / plain for traced, plain in zip(on, off, strict=True))
    print(f"median ratio of pairs:   {pairs[len(pairs) // 2]:.2f}")
    return 0 if ratio <= 1.3 and per_event_us <= 100 else 1


if __name__ == "__main__":
    raise SystemExit(main())
