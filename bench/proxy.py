"""Recording proxy benchmark: what `workbench proxy` adds to streamed requests, in each wire
format, beside LiteLLM's proxy on the same traffic.

    .venv/bin/python bench/proxy.py [--requests 100 --concurrency 200 --rounds 3
                                     --ttft-ms 100 --chunks 60 --formats chat,responses,anthropic
                                     --no-litellm]
    .venv/bin/python bench/proxy.py --fleet [--seconds 60 --concurrency 200]

Starts `workbench serve-model --script` as the upstream model (each answer waits --ttft-ms
before its first event, like a real model, then streams about --chunks chunks), `workbench
proxy` in front of it (recording every exchange into a throwaway home) and LiteLLM's proxy
(`litellm --config`, a custom logger writing every call's logging payload to a file; from
its own virtual environment under bench/.data/, made on the first run from the `bench`
dependency group of pyproject.toml: LiteLLM's proxy extra pins a `rich` that the TUI's
Textual cannot use, so it cannot share `.venv`). Each runs in its own process. For each
format — chat completions (`/v1/chat/completions`), Responses (`/v1/responses`), Anthropic
Messages (`/v1/messages`) — in the same run, the same streamed requests (aiohttp client):

- one at a time, --requests through each of direct, workbench and LiteLLM, in interleaved
  blocks: the added median latency (total time, proxy - direct) and the ratio of the
  totals to direct's. Target for workbench: <= +0.5 ms.
- --concurrency at once, --rounds rounds, each round direct, workbench, LiteLLM one after
  the other: the median time to first chunk, and its ratio to direct (the median of the
  rounds' ratios). Target for workbench: <= 1.1.

`--fleet` instead sustains --concurrency streams for --seconds per format and mixed, and
prints the recorder's lag and both of the proxy's processes' peak memory
(bench/proxy_fleet.py).

Exit 1 when a workbench target is missed. Client, upstream and both proxies share this
machine's cores: at --concurrency 200 the figures are CPU throughput under contention.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
WORKBENCH = str(Path(sys.executable).with_name("workbench"))
LITELLM_VENV = ROOT / "bench" / ".data" / "litellm-venv"
TARGET_ADDED_MS = 0.5
TARGET_TTFC_RATIO = 1.1
FORMATS = ("chat", "responses", "anthropic")
WORDS = ["the", "proxy", "passes", "every", "chunk", "through", "as", "it", "arrives"]
# The key every client sends; LiteLLM's proxy takes it as its master key.
KEY = "sk-bench-" + "5e" * 16
PROMPT = "Tell me about the proxy."

# LiteLLM's logging, on: every call's standard logging payload appended to a file, as a
# custom callback (LiteLLM calls it after each call, a stream's once it is whole).
LITELLM_LOGGER = """
import json, os
from litellm.integrations.custom_logger import CustomLogger

class FileLogger(CustomLogger):
    def __init__(self):
        super().__init__()
        self.file = open(os.environ["BENCH_LITELLM_LOG"], "a")

    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        payload = kwargs.get("standard_logging_object") or {}
        self.file.write(json.dumps(payload, default=str) + "\\n")
        self.file.flush()

    async def async_log_failure_event(self, kwargs, response_obj, start_time, end_time):
        await self.async_log_success_event(kwargs, response_obj, start_time, end_time)

logger = FileLogger()
"""


@contextmanager
def started(*args: str) -> Iterator[str]:
    """A `workbench` server in its own process; yields the base URL its first line names."""
    process = subprocess.Popen(
        [WORKBENCH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith(("serving http", "proxying http")):
            raise SystemExit(f"could not start workbench {args[0]}: {line}")
        yield line.split()[1]
    finally:
        process.terminate()
        process.wait(timeout=120)


def litellm_python() -> Path:
    """LiteLLM's own environment, made once from the `bench` dependency group."""
    python = LITELLM_VENV / "bin" / "python"
    if not (LITELLM_VENV / "bin" / "litellm").exists():
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())
        needs = project["dependency-groups"]["bench"]
        print(f"making {LITELLM_VENV} for LiteLLM ({', '.join(needs)}) ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(LITELLM_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *needs], check=True)
    return python


@contextmanager
def litellm_proxy(upstream: str, folder: Path) -> Iterator[str]:
    """LiteLLM's proxy in front of `upstream`, logging on; yields its base URL (`…/v1`)."""
    litellm_python()
    (folder / "bench_logger.py").write_text(LITELLM_LOGGER)
    models = [
        # chat completions and Responses go to the upstream as OpenAI's API; Messages as
        # Anthropic's.
        {"model_name": "bench", "litellm_params": {"model": "openai/bench", "api_base": upstream}},
        {
            "model_name": "bench-anthropic",
            "litellm_params": {"model": "anthropic/bench", "api_base": upstream[: -len("/v1")]},
        },
    ]
    config = {
        "model_list": [
            {**m, "litellm_params": {**m["litellm_params"], "api_key": "sk-x"}} for m in models
        ],
        "litellm_settings": {"callbacks": "bench_logger.logger", "drop_params": True},
    }
    (folder / "litellm.yaml").write_text(json.dumps(config))  # JSON is YAML
    port = free_port()
    env = {
        **os.environ,
        "BENCH_LITELLM_LOG": str(folder / "litellm-log.jsonl"),
        "LITELLM_LOG": "ERROR",
        "LITELLM_MASTER_KEY": KEY,
        "PYTHONPATH": str(folder),
        "NO_DOCS": "True",
        "DISABLE_ADMIN_UI": "True",
        "LITELLM_TELEMETRY": "False",
    }
    command = [str(LITELLM_VENV / "bin" / "litellm"), "--config", str(folder / "litellm.yaml")]
    process = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=open(folder / "litellm.err", "w"),  # noqa: SIM115
        env=env,
        cwd=folder,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                tail = (folder / "litellm.err").read_text()[-2000:]
                raise SystemExit(f"LiteLLM's proxy did not start:\n{tail}")
            try:
                with urllib.request.urlopen(base + "/health/liveliness", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("LiteLLM's proxy did not answer within 180 s") from None
                time.sleep(0.5)
        yield base + "/v1"
    finally:
        process.terminate()
        process.wait(timeout=60)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_script(path: Path, answers: int, ttft_ms: int, chunks: int) -> None:
    text = " ".join(WORDS[i % len(WORDS)] for i in range(chunks))
    step = {"content": text, "delay_ms": ttft_ms, "chunk_size": 6}
    path.write_text(json.dumps({"name": "bench", "steps": [step] * answers}))


def request(api: str, base_url: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    """URL, body and headers of one streamed request in wire format `api`."""
    if api == "chat":
        body = {"model": "bench", "stream": True, "messages": [{"role": "user", "content": PROMPT}]}
        return base_url + "/chat/completions", body, {"Authorization": f"Bearer {KEY}"}
    if api == "responses":
        body = {"model": "bench", "stream": True, "input": PROMPT}
        return base_url + "/responses", body, {"Authorization": f"Bearer {KEY}"}
    body = {
        "model": "bench-anthropic",
        "max_tokens": 256,
        "stream": True,
        "messages": [{"role": "user", "content": PROMPT}],
    }
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    return base_url.removesuffix("/v1") + "/v1/messages", body, headers


async def one(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any], headers: dict[str, str]
) -> tuple[float, float]:
    """(time to first chunk, total time) in ms for one streamed request."""
    sent = time.perf_counter()
    first: float | None = None
    async with session.post(url, json=body, headers=headers) as reply:
        if reply.status != 200:
            raise SystemExit(f"{url} answered {reply.status}: {(await reply.text())[:300]}")
        async for _ in reply.content.iter_any():
            if first is None:
                first = time.perf_counter()
    done = time.perf_counter()
    assert first is not None
    return (first - sent) * 1000.0, (done - sent) * 1000.0


async def batch(
    api: str, base_url: str, requests: int, concurrency: int
) -> list[tuple[float, float]]:
    url, body, headers = request(api, base_url)
    gate = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def gated() -> tuple[float, float]:
            async with gate:
                return await one(session, url, body, headers)

        return list(await asyncio.gather(*(gated() for _ in range(requests))))


def median_of(results: list[tuple[float, float]], which: int) -> float:
    return statistics.median(r[which] for r in results)


@dataclass
class Figures:
    sequential_first: float  # ms, median
    sequential_total: float
    rounds: list[float]  # each concurrent round's median time to first chunk, ms


def measure(api: str, sides: dict[str, str], args: argparse.Namespace) -> dict[str, Figures]:
    """Per side: sequential median total, concurrent median first chunk (per round)."""

    def run(url: str, requests: int, concurrency: int) -> list[tuple[float, float]]:
        return asyncio.run(batch(api, url, requests, concurrency))

    for url in sides.values():  # warm-up: connections, caches, first-call costs
        run(url, 20, 20)
    sequential: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    block = 20
    for start in range(0, args.requests, block):
        for side, url in sides.items():
            sequential[side] += run(url, min(block, args.requests - start), 1)
    concurrent: dict[str, list[float]] = {side: [] for side in sides}
    for _ in range(args.rounds):
        for side, url in sides.items():
            concurrent[side].append(median_of(run(url, args.concurrency, args.concurrency), 0))
    return {
        side: Figures(
            median_of(sequential[side], 0), median_of(sequential[side], 1), concurrent[side]
        )
        for side in sides
    }


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=100, help="sequential, per side")
    parser.add_argument("--concurrency", type=int, default=200, help="streams at once")
    parser.add_argument("--rounds", type=int, default=3, help="concurrent rounds per side")
    parser.add_argument("--ttft-ms", type=int, default=100, help="upstream's first-chunk delay")
    parser.add_argument("--chunks", type=int, default=60, help="about this many chunks each")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--no-litellm", action="store_true", help="leave LiteLLM's proxy out")
    parser.add_argument("--fleet", action="store_true", help="sustained streams, per format")
    parser.add_argument("--seconds", type=float, default=60.0, help="--fleet: per side, format")
    parser.add_argument("--workers", type=int, default=1, help="the proxy's --workers")
    args = parser.parse_args()
    if args.fleet:
        from proxy_fleet import run_fleet

        return run_fleet(args, WORKBENCH, request, started, write_script)
    formats = [f for f in args.formats.split(",") if f]
    if bad := [f for f in formats if f not in FORMATS]:
        parser.error(f"unknown format {bad[0]!r}; choose from {', '.join(FORMATS)}")
    sides_count = 2 if args.no_litellm else 3
    answers = sides_count * len(formats) * (20 + args.requests + args.rounds * args.concurrency)
    results: dict[str, dict[str, Figures]] = {}
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "script.json"
        write_script(script, answers + 100, args.ttft_ms, args.chunks)
        home = Path(folder) / "home"
        with (
            started("serve-model", "--script", str(script), "--port", "0") as upstream,
            started(
                "proxy", "--upstream", upstream, "--home", str(home), "--workers", str(args.workers)
            ) as proxy,
        ):
            sides = {"direct": upstream, "workbench": proxy}
            litellm = None if args.no_litellm else litellm_proxy(upstream, Path(folder))
            if litellm is not None:
                sides["litellm"] = litellm.__enter__()
            try:
                load = os.getloadavg()[0]
                for api in formats:
                    results[api] = measure(api, sides, args)
            finally:
                if litellm is not None:
                    litellm.__exit__(None, None, None)
        recorded = len(list((home / "traces").glob("*.jsonl")))
        logged = 0
        if not args.no_litellm and (Path(folder) / "litellm-log.jsonl").exists():
            logged = len((Path(folder) / "litellm-log.jsonl").read_text().splitlines())
    load_after = os.getloadavg()[0]
    sent = len(formats) * (20 + args.requests + args.rounds * args.concurrency)
    print(
        f"streamed requests, upstream first event after {args.ttft_ms} ms, ~{args.chunks} "
        f"chunks; sequential: {args.requests} per side; concurrent: {args.concurrency} at "
        f"once, {args.rounds} rounds; load average {load:.1f} -> {load_after:.1f}"
    )
    print(
        f"recorded by workbench: {recorded} runs of {sent} requests"
        + ("" if args.no_litellm else f"; logged by LiteLLM: {logged}")
    )
    ok = True
    print(
        f"{'format':<10} {'side':<10} {'seq first':>10} {'seq total':>10} {'added':>9} "
        f"{'seq ratio':>9} {'conc first':>11} {'ratio':>7}"
    )
    for api, sides_results in results.items():
        direct = sides_results["direct"]
        for side, figures in sides_results.items():
            added = figures.sequential_total - direct.sequential_total
            seq_ratio = figures.sequential_total / direct.sequential_total
            ratios = [a / b for a, b in zip(figures.rounds, direct.rounds, strict=True)]
            ratio = statistics.median(ratios)
            conc = statistics.median(figures.rounds)
            note = ""
            if side == "workbench":
                met = added <= TARGET_ADDED_MS and ratio <= TARGET_TTFC_RATIO
                ok = ok and met
                note = f"  (targets <= +{TARGET_ADDED_MS} ms, <= {TARGET_TTFC_RATIO})" + (
                    "" if met else " MISSED"
                )
            print(
                f"{api:<10} {side:<10} {figures.sequential_first:8.2f}ms "
                f"{figures.sequential_total:8.2f}ms "
                f"{'' if side == 'direct' else f'{added:+7.2f}ms':>9} "
                f"{'' if side == 'direct' else f'{seq_ratio:9.3f}':>9} "
                f"{conc:9.1f}ms {'' if side == 'direct' else f'{ratio:7.3f}':>7}{note}"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
