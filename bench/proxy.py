"""Recording proxy benchmark: what `workbench proxy` adds to streamed requests.

    .venv/bin/python bench/proxy.py [--requests 200 --concurrency 1 --ttft-ms 100
                                     --chunks 60]

Starts `workbench serve-model --script` as the upstream model (each answer waits --ttft-ms
before its first chunk, like a real model, then streams about --chunks chunks) and
`workbench proxy` in front of it, each in its own process. In the same run it sends
--requests streamed chat completions (--concurrency at a time, aiohttp client) directly to
the upstream, then the same number through the proxy (which records every one into a
throwaway home), and prints for both the median time to first chunk and the median total
time. Targets: added median latency (proxy - direct, total time) under 2 ms, and a
first-chunk ratio (proxy / direct, medians) under 1.1. Exit 1 when a target is missed.

The default sends one request at a time, which measures the latency the proxy adds to a
request. `--concurrency 200` sends all at once: then the figures measure CPU throughput on
this machine (client, upstream and proxy share its cores, and the proxy records every
chunk), not per-request latency.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
WORKBENCH = str(Path(sys.executable).with_name("workbench"))
TARGET_ADDED_MS = 2.0
TARGET_TTFC_RATIO = 1.1
WORDS = [
    "the",
    "proxy",
    "passes",
    "every",
    "chunk",
    "through",
    "as",
    "it",
    "arrives",
    "and",
    "records",
    "it",
    "on",
    "the",
    "way",
]


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
        process.wait(timeout=30)


def write_script(path: Path, answers: int, ttft_ms: int, chunks: int) -> None:
    text = " ".join(WORDS[i % len(WORDS)] for i in range(chunks))
    step = {"content": text, "delay_ms": ttft_ms, "chunk_size": 6}
    path.write_text(json.dumps({"name": "bench", "steps": [step] * answers}))


async def one(session: aiohttp.ClientSession, url: str) -> tuple[float, float]:
    """(time to first chunk, total time) in ms for one streamed request."""
    body = {
        "model": "bench",
        "stream": True,
        "messages": [{"role": "user", "content": "Tell me about the proxy."}],
    }
    sent = time.perf_counter()
    first: float | None = None
    async with session.post(url, json=body, headers={"Authorization": "Bearer sk-x"}) as reply:
        assert reply.status == 200, reply.status
        async for _ in reply.content.iter_any():
            if first is None:
                first = time.perf_counter()
    done = time.perf_counter()
    assert first is not None
    return (first - sent) * 1000.0, (done - sent) * 1000.0


async def batch(base_url: str, requests: int, concurrency: int) -> list[tuple[float, float]]:
    url = base_url + "/chat/completions"
    gate = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def gated() -> tuple[float, float]:
            async with gate:
                return await one(session, url)

        return list(await asyncio.gather(*(gated() for _ in range(requests))))


def medians(results: list[tuple[float, float]]) -> tuple[float, float]:
    return (
        statistics.median(r[0] for r in results),
        statistics.median(r[1] for r in results),
    )


def main() -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=1, help="requests at a time")
    parser.add_argument("--ttft-ms", type=int, default=100, help="upstream's first-chunk delay")
    parser.add_argument("--chunks", type=int, default=60, help="about this many chunks each")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "script.json"
        warmup = 20
        write_script(script, 2 * (args.requests + warmup), args.ttft_ms, args.chunks)
        home = Path(folder) / "home"
        with (
            started("serve-model", "--script", str(script), "--port", "0") as upstream,
            started("proxy", "--upstream", upstream, "--home", str(home)) as proxy,
        ):
            asyncio.run(batch(upstream, warmup, warmup))
            asyncio.run(batch(proxy, warmup, warmup))
            direct = asyncio.run(batch(upstream, args.requests, args.concurrency))
            proxied = asyncio.run(batch(proxy, args.requests, args.concurrency))
        recorded = len(list((home / "traces").glob("*.jsonl")))
    (direct_ttfc, direct_total), (proxy_ttfc, proxy_total) = medians(direct), medians(proxied)
    added = proxy_total - direct_total
    ratio = proxy_ttfc / direct_ttfc
    print(
        f"{args.requests} streamed requests, {args.concurrency} at a time, "
        f"upstream first chunk after {args.ttft_ms} ms, {recorded} runs recorded"
    )
    print(f"direct:        first chunk {direct_ttfc:8.2f} ms   total {direct_total:8.2f} ms")
    print(f"through proxy: first chunk {proxy_ttfc:8.2f} ms   total {proxy_total:8.2f} ms")
    print(f"added median latency {added:.2f} ms (target < {TARGET_ADDED_MS:g} ms)")
    print(f"first-chunk ratio {ratio:.3f} (target < {TARGET_TTFC_RATIO:g})")
    return 0 if added < TARGET_ADDED_MS and ratio < TARGET_TTFC_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
