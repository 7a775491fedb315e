"""Tracing overhead: a 100-turn agent run on the in-process scripted model, traced to JSONL
versus not traced, in the same process.

    .venv/bin/python bench/overhead.py [--turns 100] [--repeats 15]

"Traced" is what `workbench run` does: every event goes through the redacting JSONL writer,
appended and flushed per event. "Not traced" runs the same loop with no sink (the events
are still built, because the loop streams them to its caller). "The limit" is the least a
trace line can cost, measured in the same run: the same events serialized by the fastest
JSON encoder installed (pydantic's own, in Rust) and written with one `write` each, no
redaction, no history reuse. The three run interleaved, N times (so the machine's drift hits
all alike; the writer and the limit take turns at running right after the untraced run,
a place that costs a run more); each triple gives what tracing added to that untraced run,
per event, for the writer and for the limit.

Target: each traced event costs at most 1.15 times what the limit costs it: the median of
the triples' writer cost over the median of their limit cost, by wall clock or by CPU time
(one of them must meet it; CPU time is steadier on a shared machine). The per-event write
stays (crash safety comes first), so the limit is the floor. The ratio of a traced run to
an untraced one is printed too, with the limit's own, as information: it says what the
loop around the writer costs, not what the writer does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
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

# Each traced event's cost at most this many times the limit's, in the same run.
TARGET_TO_LIMIT = 1.15


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
        for number in range(args.repeats):  # interleaved, so drift hits all alike
            wall, cpu, _ = asyncio.run(one_run(args.turns, None))
            off.append((wall, cpu))
            # The writer and the limit take turns at running right after the untraced run:
            # a run there costs more (the limit against itself: 6-16% more).
            for limit in (False, True) if number % 2 == 0 else (True, False):
                wall, cpu, events = asyncio.run(one_run(args.turns, Path(scratch), limit))
                (least if limit else on).append((wall, cpu))
    # Per triple: what tracing added to its untraced run, for the writer and for the limit.
    writer_wall = [(w - o) / events * 1e6 for (w, _), (o, _) in zip(on, off, strict=True)]
    limit_wall = [(w - o) / events * 1e6 for (w, _), (o, _) in zip(least, off, strict=True)]
    writer_cpu = [(c - o) / events * 1e6 for (_, c), (_, o) in zip(on, off, strict=True)]
    limit_cpu = [(c - o) / events * 1e6 for (_, c), (_, o) in zip(least, off, strict=True)]
    med = statistics.median
    to_limit = _times(med(writer_wall), med(limit_wall))
    cpu_to_limit = _times(med(writer_cpu), med(limit_cpu))
    off_wall, off_cpu = med(w for w, _ in off), med(c for _, c in off)
    print(
        f"run: {args.turns} turns, {events:,} events, {args.repeats} interleaved triples (medians)"
    )
    print(f"not traced: {off_wall * 1000:8.1f} ms wall {off_cpu * 1000:8.1f} ms CPU")
    for name, runs in (("traced:", on), ("limit:", least)):
        wall, cpu = med(w for w, _ in runs), med(c for _, c in runs)
        print(
            f"{name:<11} {wall * 1000:8.1f} ms wall {cpu * 1000:8.1f} ms CPU; "
            f"ratio to not traced {wall / off_wall:.2f} wall, {cpu / off_cpu:.2f} CPU (reported)"
        )
    print(
        f"limit (encode + one write of each event, no redaction): {med(limit_wall):.1f} µs wall, "
        f"{med(limit_cpu):.1f} µs CPU per event"
    )
    print(
        f"tracing cost per event:  {med(writer_wall):.1f} µs wall, {med(writer_cpu):.1f} µs CPU"
        f" = {_text(to_limit)} wall, {_text(cpu_to_limit)} CPU the limit   (target <= "
        f"{TARGET_TO_LIMIT}x)"
    )
    return 0 if min(to_limit, cpu_to_limit) <= TARGET_TO_LIMIT else 1


def _times(cost: float, limit: float) -> float:
    return cost / limit if limit > 0 else float("inf")


def _text(times: float) -> str:
    return f"{times:.2f}x" if times != float("inf") else "n/a (limit <= 0)"


if __name__ == "__main__":
    raise SystemExit(main())
