"""Replay benchmark: a recorded 100-turn run with 300 tool calls, replayed offline.

    .venv/bin/python bench/replay.py [--turns 100 --calls-per-turn 3 --repeat 3]

Records the run once with the real loop, a scripted model and the real calculator tool
(three read-only calls per turn, so the loop takes its concurrent path), writes it as JSONL,
loads it back, then replays it. Prints the wall time of the replay itself (target < 1 s)
and events per second, plus the time to record and to load for context.
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
from traces.writer import JsonlWriter  # noqa: E402
from workbench.engine.recording.replay.verify import replay_run  # noqa: E402
from workbench.engine.recording.runs.load import read_recording_file  # noqa: E402

TARGET_S = 1.0


def script(turns: int, per_turn: int) -> list[dict[str, object]]:
    steps: list[dict[str, object]] = []
    for turn in range(1, turns + 1):
        calls = [
            {
                "id": f"call_{turn}_{n}",
                "name": "calculator",
                # Different arguments every turn, or the loop stops on duplicate calls.
                "arguments": {"expression": f"{turn} * {n + 1} + 0.5"},
            }
            for n in range(per_turn)
        ]
        steps.append({"content": f"Step {turn}.", "tool_calls": calls})
    return steps


async def record(folder: Path, turns: int, per_turn: int) -> Path:
    config = AgentConfig(
        task="Work through the calculations one turn at a time.",
        system_prompt="You are a benchmark agent.",
        # The run ends at max_turns after exactly `turns` turns of tool calls.
        limits=Limits(max_turns=turns, token_budget=10**9, context_window=10**7),
    )
    writer = JsonlWriter(folder, config.run_id)
    agent = Agent(
        ScriptedModel(script(turns, per_turn)), [builtin_tools(folder)], config, sinks=[writer]
    )
    result = await agent.run()
    if result.totals.tool_calls != turns * per_turn:
        raise SystemExit(f"recording went wrong: {result.status} {result.reason}")
    return writer.path


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--calls-per-turn", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3, help="replays to time (best is shown)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        path = asyncio.run(record(Path(tmp), args.turns, args.calls_per_turn))
        record_s = time.perf_counter() - started

        started = time.perf_counter()
        recording = read_recording_file(path)
        load_s = time.perf_counter() - started

        timings = []
        for _ in range(max(1, args.repeat)):
            started = time.perf_counter()
            outcome = asyncio.run(replay_run(recording))
            timings.append(time.perf_counter() - started)
            if outcome.status != "identical":
                print(f"replay diverged: {outcome.to_json()}", file=sys.stderr)
                return 1
        best = min(timings)

    events = outcome.events_compared
    calls = sum(1 for e in recording.events if e.type == "tool_end")
    print(f"run: {len(recording.model_turns)} turns, {calls} tool calls, {events} events")
    print(f"record: {record_s:.3f} s   load: {load_s:.3f} s")
    print(
        f"replay: {best:.3f} s (best of {len(timings)}; target < {TARGET_S:g} s)   "
        f"{events / best:,.0f} events/s"
    )
    return 0 if best < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
