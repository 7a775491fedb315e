"""Regression-suite benchmark: 100 cases x 3 samples against a local model server with
100 ms latency, 8 samples at a time.

    .venv/bin/python bench/regress.py [--cases 100 --samples 3 --latency 0.1 --concurrency 8]

Runs the whole `workbench test` path in process (suite file, builtin tools, the real openai
SDK over HTTP to a local OpenAI-compatible server, one recorded trace per sample, results
and baseline in DuckDB) and prints the wall time and its ratio to the ideal
cases * samples * latency / concurrency. Target: ratio <= 1.5.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agent_core.model.openai_client import OpenAIChatModel  # noqa: E402
from agent_core.model.script import ScriptStep, step_chunks  # noqa: E402
from workbench.engine.http.model_server import ModelServer, Reply  # noqa: E402
from workbench.engine.regress.session import (  # noqa: E402
    SuiteRequest,
    open_results_store,
    run_suite_request,
)
from workbench.engine.regress.suite import load_suite  # noqa: E402

TOOLS = ("read_file", "list_dir", "search_files", "calculator")


class NamedToolResponder:
    """Calls the tool the task names, after `latency` seconds, like a slow but sure model."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self._numbers = itertools.count(1)

    def __call__(self, body: dict[str, Any]) -> Reply:
        number = next(self._numbers)
        task = str(body["messages"][-1].get("content") or "")
        name = next((tool for tool in TOOLS if tool in task), "list_dir")
        step = ScriptStep.model_validate({"tool_calls": [{"name": name, "arguments": {}}]})
        chunks: list[dict[str, Any] | str] = list(
            step_chunks(step, model="bench", response_id=f"b{number}", call_number=number)
        )
        return Reply(chunks=chunks, done=True, delay_s=self.latency)


def write_suite(path: Path, cases: int, samples: int) -> None:
    lines = ["[suite]", 'name = "bench"', f"samples = {samples}", 'tools = "builtin"', ""]
    for number in range(cases):
        tool = TOOLS[number % len(TOOLS)]
        lines += [
            "[[case]]",
            f'id = "case-{number:03d}"',
            f'task = "Case {number}: use {tool} please."',
            f'expect_tool = "{tool}"',
            "",
        ]
    path.write_text("\n".join(lines), encoding="utf-8")


async def main_async(args: argparse.Namespace, work: Path) -> float:
    suite_path = work / "bench.wbsuite.toml"
    write_suite(suite_path, args.cases, args.samples)
    (work / "root").mkdir()
    home = work / "home"
    server = ModelServer(NamedToolResponder(args.latency), model="bench")
    with server:
        model = OpenAIChatModel(server.base_url, None, "bench")
        request = SuiteRequest(
            suite=load_suite(suite_path),
            home=home,
            root=work / "root",
            concurrency=args.concurrency,
            save_baseline="bench",
        )
        started = time.perf_counter()
        store = open_results_store(home)
        outcome = await run_suite_request(request, model, store)
        store.close()
        wall = time.perf_counter() - started
        await model.aclose()
    result = outcome.result
    passed = sum(case.status == "pass" for case in result.cases)
    traces = len(list((home / "traces").glob("*.jsonl")))
    print(f"cases passed: {passed}/{len(result.cases)}, traces written: {traces}")
    return wall


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per model call")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wb-bench-regress-") as folder:
        wall = asyncio.run(main_async(args, Path(folder)))
    ideal = args.cases * args.samples * args.latency / args.concurrency
    ratio = wall / ideal
    verdict = "ok" if ratio <= 1.5 else "over target"
    print(
        f"wall time: {wall:.2f}s; ideal {ideal:.2f}s; ratio {ratio:.2f} (target <= 1.5: {verdict})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
