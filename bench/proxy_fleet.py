"""`bench/proxy.py --fleet`: `workbench proxy` under a fleet of agents, sustained.

For each wire format (chat completions, Responses, Anthropic Messages) and for the three
mixed, --concurrency clients (200) each send streamed requests back to back for --seconds
(60), first straight to the upstream, then through a proxy of its own (a fresh home each
time). Printed beside each target:

- the median time to first chunk through the proxy over direct's (target <= 1.1), and the
  requests a second both sides got through;
- the recorder's lag at the end: from the last answer to the proxy's exit on SIGTERM, which
  waits until every exchange it forwarded is recorded (target < 1 s);
- the peak memory (VmHWM) of the proxy's process (the largest of its forwarding processes
  with --workers) and of its recording process, polled while they run, and how many runs
  were recorded of the requests sent (each request here is a run of its own).

The upstream is a server in its own process that answers every request with serve-model's
own stream for its format (taken once, at the start, from `workbench serve-model --script`:
the same bytes, in the same pieces, the first after --ttft-ms), so it never runs out of
script however many requests the fleet sends.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

TARGET_RATIO = 1.1
TARGET_LAG_S = 1.0
MIXED = "mixed"


@dataclass
class Phase:
    firsts: list[float]  # ms, every request's time to first chunk
    seconds: float

    @property
    def median(self) -> float:
        return statistics.median(self.firsts)

    @property
    def rate(self) -> float:
        return len(self.firsts) / self.seconds


@dataclass
class Proxied:
    phase: Phase
    lag_s: float
    proxy_mb: float
    recorder_mb: float
    recorded: int
    sent: int  # requests through the proxy, its warm-up's included


async def take_streams(upstream: str, formats: tuple[str, ...], request: Any) -> dict[str, Any]:
    """Each format's answer from serve-model: status, content type and its pieces."""
    taken: dict[str, Any] = {}
    async with aiohttp.ClientSession() as session:
        for api in formats:
            url, body, headers = request(api, upstream)
            async with session.post(url, json=body, headers=headers) as reply:
                pieces = [piece.decode() async for piece in reply.content.iter_any()]
                taken[api] = {"type": reply.content_type, "pieces": pieces}
    return taken


def serve_streams(streams_file: str, ttft_ms: str) -> None:
    """The fleet's upstream (a process of its own): every request to a format's path gets
    that format's stream, its first piece after `ttft_ms`."""
    streams = json.loads(Path(streams_file).read_text())
    delay = int(ttft_ms) / 1000.0
    paths = {
        "/v1/chat/completions": "chat",
        "/v1/responses": "responses",
        "/v1/messages": "anthropic",
    }

    async def answer(request: web.Request) -> web.StreamResponse:
        await request.read()
        stream = streams[paths[request.path]]
        reply = web.StreamResponse(headers={"Content-Type": stream["type"]})
        await asyncio.sleep(delay)
        await reply.prepare(request)
        for piece in stream["pieces"]:
            await reply.write(piece.encode())
        await reply.write_eof()
        return reply

    async def main() -> None:
        app = web.Application()
        for path in paths:
            app.router.add_post(path, answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        print(f"serving http://127.0.0.1:{port}/v1", flush=True)
        await asyncio.Event().wait()

    try:
        import uvloop

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())


async def sustained(
    formats: list[str], base_url: str, concurrency: int, seconds: float, request: Any
) -> Phase:
    """`concurrency` clients sending back to back for `seconds` (client i sends format
    i mod len(formats)); every request's time to first chunk."""
    firsts: list[float] = []
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        end = started + seconds

        async def client(index: int) -> None:
            url, body, headers = request(formats[index % len(formats)], base_url)
            while time.perf_counter() < end:
                sent = time.perf_counter()
                first: float | None = None
                async with session.post(url, json=body, headers=headers) as reply:
                    if reply.status != 200:
                        raise SystemExit(f"{url} answered {reply.status}: {await reply.text()}")
                    async for _ in reply.content.iter_any():
                        if first is None:
                            first = time.perf_counter()
                assert first is not None
                firsts.append((first - sent) * 1000.0)

        await asyncio.gather(*(client(i) for i in range(concurrency)))
        return Phase(firsts, time.perf_counter() - started)


class PeakMemory:
    """The highest resident set (VmHWM) of the proxy's processes, polled: the forwarding
    ones (the proxy and its workers) and its recording process."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peaks: dict[int, float] = {}
        self.recorder: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(0.25):
            for pid in [self.pid, *_children(self.pid)]:
                peak = _hwm_mb(pid)
                if peak is not None:
                    self.peaks[pid] = max(self.peaks.get(pid, 0.0), peak)
                if self.recorder is None and _is_recorder(pid):
                    self.recorder = pid

    def stop(self) -> tuple[float, float]:
        """(the largest forwarding process's peak, the recording process's) in MB."""
        self._stop.set()
        self._thread.join()
        recorder = self.peaks.pop(self.recorder, 0.0) if self.recorder is not None else 0.0
        return max(self.peaks.values(), default=0.0), recorder


def _is_recorder(pid: int) -> bool:
    try:
        return b"http.recording" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _hwm_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def proxied(
    workbench: str, formats: list[str], upstream: str, args: Any, request: Any, folder: Path
) -> Proxied:
    """One sustained phase through a proxy of its own, then its stop timed."""
    home = folder / f"home-{'-'.join(formats)}"
    argv = [workbench, "proxy", "--upstream", upstream, "--home", str(home)]
    process = subprocess.Popen(
        [*argv, "--workers", str(args.workers)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("proxying http"):
        raise SystemExit(f"could not start workbench proxy: {line}")
    memory = PeakMemory(process.pid)
    try:
        base = line.split()[1]
        warm = asyncio.run(sustained(formats, base, 20, 1.0, request))
        phase = asyncio.run(sustained(formats, base, args.concurrency, args.seconds, request))
        stopped = time.perf_counter()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=600)
        lag = time.perf_counter() - stopped
    finally:
        if process.poll() is None:
            process.kill()
        proxy_mb, recorder_mb = memory.stop()
    recorded = sum(1 for _ in (home / "traces").glob("*.jsonl"))
    sent = len(warm.firsts) + len(phase.firsts)
    return Proxied(phase, lag, proxy_mb, recorder_mb, recorded, sent)


def run_fleet(args: Any, workbench: str, request: Any, started: Any, write_script: Any) -> int:
    """`--fleet`: every format alone, then mixed; returns the exit status."""
    formats = ("chat", "responses", "anthropic")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        write_script(folder / "script.json", 10, args.ttft_ms, args.chunks)
        with started("serve-model", "--script", str(folder / "script.json"), "--port", "0") as up:
            streams = asyncio.run(take_streams(up, formats, request))
        (folder / "streams.json").write_text(json.dumps(streams))
        upstream = subprocess.Popen(
            [sys.executable, __file__, str(folder / "streams.json"), str(args.ttft_ms)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert upstream.stdout is not None
            up = upstream.stdout.readline().split()[1]
            load = os.getloadavg()[0]
            results: dict[str, tuple[Phase, Proxied]] = {}
            for name in (*formats, MIXED):
                chosen = list(formats) if name == MIXED else [name]
                asyncio.run(sustained(chosen, up, 20, 1.0, request))  # warm-up
                direct = asyncio.run(sustained(chosen, up, args.concurrency, args.seconds, request))
                results[name] = (direct, proxied(workbench, chosen, up, args, request, folder))
        finally:
            upstream.terminate()
            upstream.wait()
    print(
        f"fleet: {args.concurrency} streams at once, back to back for {args.seconds:g} s per "
        f"side and format, proxy --workers {args.workers}; upstream first piece after "
        f"{args.ttft_ms} ms; load average "
        f"{load:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'format':<10} {'direct first':>12} {'proxy first':>12} {'ratio':>6} "
        f"{'req/s direct':>13} {'proxy':>6} {'lag':>7} {'proxy MB':>9} {'recorder MB':>12} "
        f"{'recorded':>16}"
    )
    ok = True
    for name, (direct, through) in results.items():
        ratio = through.phase.median / direct.median
        sent = through.sent
        met = ratio <= TARGET_RATIO and through.lag_s < TARGET_LAG_S and through.recorded == sent
        ok = ok and met
        print(
            f"{name:<10} {direct.median:10.1f}ms {through.phase.median:10.1f}ms {ratio:6.2f} "
            f"{direct.rate:13.0f} {through.phase.rate:6.0f} {through.lag_s:6.2f}s "
            f"{through.proxy_mb:9.0f} {through.recorder_mb:12.0f} "
            f"{through.recorded:>7} of {sent:<6}" + ("" if met else "  MISSED")
        )
    print(
        f"targets: ratio <= {TARGET_RATIO}, lag < {TARGET_LAG_S:g} s, every request recorded "
        "once (a second of warm-up included)"
    )
    return 0 if ok else 1


if __name__ == "__main__":  # the fleet's upstream
    serve_streams(*sys.argv[1:3])
