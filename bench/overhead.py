"""Tracing overhead: a 100-turn agent run on the in-process scripted model, traced to JSONL
versus not traced, in the same process.

    .venv/bin/python bench/overhead.py [--turns 100] [--repeats 15]

"Traced" is what `workbench run` does: every event goes through the redacting JSONL writer,
appended and flushed per event. "Not traced" runs the same loop with no sink (the events
are still built, because the loop streams them to its caller). Prints, for each, the best
of N runs by wall clock and by CPU time (steadier on a shared machine), their ratios
(target <= 1.3) and the tracing cost per event next to the limit measured in the same run:
the same events serialized by the fastest JSON encoder installed (pydantic's own, in Rust)
and written with one `write` each, no redaction, no history reuse. Target: each event costs
at most 1.3 times what the limit costs it (by wall clock and by CPU time; one of them must
meet it, as for the ratio). The limit's own figure moves with the machine's load, so the
target is relative to it rather than an absolute time. The median ratio of the
interleaved pairs is printed too, the traced run's and the limit's, as a check on a noisy
machine (the writer reuses the history's texts, which the limit encodes again for every
request, so it can cost less than the limit).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent_core.agent import Agent, AgentConfig  # noqa: E402
from agent_core.model.scripted import ScriptedModel  # noqa: E402
from agent_core.tools.builtin import builtin_tools  # noqa: E402
from traces.events import Limits  # noqa: E402
from traces.redact import Redactor  # noqa: E402
from traces.writer import JsonlWriter, Sink  # noqa: E402


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


async def one_run(turns: int, folder: Path | None, limit: bool = False) -> tuple[float, float, int]:
    """Wall and CPU seconds and events for one run; traced to `folder` when given (with
    the `LimitSink` instead of the writer if `limit`)."""
    config = AgentConfig(
        task="Compute every step.",
        # The history grows for 100 turns; keep budget and window out of the way.
        limits=Limits(max_turns=turns + 1, token_budget=10**9, context_window=10**7),
    )
    sinks: list[Sink] = []
    if folder is not None and limit:
        sinks.append(LimitSink(folder, config.run_id))
    elif folder is not None:
        sinks.append(JsonlWriter(folder, config.run_id, Redactor(["sk-bench-secret"])))
    agent = Agent(ScriptedModel(script(turns)), [builtin_tools(ROOT)], config, sinks=sinks)
    events = 0
    started, cpu = time.perf_counter(), time.process_time()
    async for item in agent.run_stream():
        events += hasattr(item, "seq")
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert agent.result is not None and agent.result.status == "completed", agent.result
    return elapsed, cpu, events


class LimitSink:
    """The least a trace line can cost: each event serialized by the fastest JSON encoder
    installed (pydantic's own, in Rust) and written with one `write`; no redaction, no
    reuse of the history's texts."""

    def __init__(self, folder: Path, run_id: str) -> None:
        self._fd = os.open(folder / f"{run_id}.limit.jsonl", os.O_WRONLY | os.O_CREAT)

    def write(self, event: Any) -> None:
        os.write(self._fd, event.__pydantic_serializer__.to_json(event) + b"\n")

    def close(self) -> None:
        os.close(self._fd)


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    off: list[tuple[float, float]] = []
    on: list[tuple[float, float]] = []
    least: list[tuple[float, float]] = []
    events = 0
    with tempfile.TemporaryDirectory() as scratch:
        asyncio.run(one_run(args.turns, None))  # warm-up: imports, caches
        for _ in range(args.repeats):  # interleaved, so drift hits all alike
            wall, cpu, _ = asyncio.run(one_run(args.turns, None))
            off.append((wall, cpu))
            wall, cpu, events = asyncio.run(one_run(args.turns, Path(scratch)))
            on.append((wall, cpu))
            wall, cpu, _ = asyncio.run(one_run(args.turns, Path(scratch), limit=True))
            least.append((wall, cpu))
    best_off, best_on = min(w for w, _ in off), min(w for w, _ in on)
    cpu_off, cpu_on = min(c for _, c in off), min(c for _, c in on)
    limit_wall_us = (min(w for w, _ in least) - best_off) / events * 1e6
    limit_us = (min(c for _, c in least) - cpu_off) / events * 1e6
    limit_ratio = min(c for _, c in least) / cpu_off
    ratio, cpu_ratio = best_on / best_off, cpu_on / cpu_off
    per_event_us = (best_on - best_off) / events * 1e6
    cpu_per_event_us = (cpu_on - cpu_off) / events * 1e6
    # Each event's cost as a multiple of the limit's (by wall clock and by CPU time).
    to_limit = per_event_us / limit_wall_us if limit_wall_us > 0 else float("inf")
    cpu_to_limit = cpu_per_event_us / limit_us if limit_us > 0 else float("inf")
    print(f"run: {args.turns} turns, {events:,} events, best of {args.repeats}")
    print(f"not traced: {best_off * 1000:8.1f} ms wall {cpu_off * 1000:8.1f} ms CPU")
    print(f"traced:     {best_on * 1000:8.1f} ms wall {cpu_on * 1000:8.1f} ms CPU")
    print(f"ratio traced/not traced: {ratio:.2f} wall, {cpu_ratio:.2f} CPU   (target <= 1.3)")
    print(
        f"limit (encode + one write of each event, no redaction): {limit_wall_us:.1f} µs wall, "
        f"{limit_us:.1f} µs CPU per event, ratio {limit_ratio:.2f} CPU"
    )
    wall_times = f"{to_limit:.2f}x" if to_limit != float("inf") else "n/a (limit <= 0 by wall)"
    print(
        f"tracing cost per event:  {per_event_us:.1f} µs wall, {cpu_per_event_us:.1f} µs CPU = "
        f"{wall_times}, {cpu_to_limit:.2f}x the limit   (target <= 1.3x)"
    )
    pairs = sorted(traced / plain for (traced, _), (plain, _) in zip(on, off, strict=True))
    floor = sorted(limit / plain for (limit, _), (plain, _) in zip(least, off, strict=True))
    print(
        f"median ratio of pairs:   {pairs[len(pairs) // 2]:.2f}, "
        f"the limit's {floor[len(floor) // 2]:.2f} (wall)"
    )
    return 0 if min(ratio, cpu_ratio) <= 1.3 and min(to_limit, cpu_to_limit) <= 1.3 else 1


if __name__ == "__main__":
    raise SystemExit(main())
