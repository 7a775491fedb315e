"""Compressed request bodies at `workbench proxy` and `serve-model`, each run as the real
command: a gzip body is read inflated, and a gzip bomb (1 MB that inflates to 1 GiB) is
refused with 413 while it inflates, so the server's memory comes back after five of them."""

from __future__ import annotations

import gzip
import signal
import urllib.error
import urllib.request
import zlib
from pathlib import Path

import pytest

from tests.engine.capture_support import runs
from tests.engine.test_server_runner import WAIT_S, Running, good_body, running

MIB = 1 << 20


def post(live: Running, body: bytes, encoding: str) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"http://{live.address}{live.post_path}",
        data=body,
        headers={
            "Content-Type": "application/json",
            "Authorization": "Bearer k",
            "Content-Encoding": encoding,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=WAIT_S) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def resident_mb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(line.split()[1]) // 1024


def gzip_bomb(inflated_mb: int) -> bytes:
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MIB)
    return b"".join(squeeze.compress(zeros) for _ in range(inflated_mb)) + squeeze.flush()


@pytest.mark.parametrize("server", ["proxy", "serve-model"])
def test_gzip_bodies_are_read_and_gzip_bombs_leave_no_memory_behind(
    server: str, tmp_path: Path
) -> None:
    bomb = gzip_bomb(1024)
    assert len(bomb) < 2 * MIB
    with running(server, tmp_path) as live:
        status, answer = post(live, gzip.compress(good_body(server)), "gzip")
        assert status == 200, answer
        status, answer = post(live, zlib.compress(good_body(server)), "deflate")
        assert status == 200, answer
        before = resident_mb(live.process.pid)
        for _ in range(5):
            status, answer = post(live, bomb, "gzip")
            assert status == 413 and b"larger than the server's limit" in answer, answer
        grown = resident_mb(live.process.pid) - before
        assert grown < 64, f"{grown} MB more after five gzip bombs"
        status, answer = post(live, b"{}", "br")
        assert status == 415 and b"content encoding 'br'" in answer
        _, err = live.stop(signal.SIGTERM)
    assert live.process.returncode == 0 and "Traceback" not in err, err
    if server == "proxy":  # the inflated requests were recorded as sent
        requests = [e for run in runs(live.home) for e in run if e["type"] == "model_request"]
        assert [r["messages"] for r in requests] == [[{"role": "user", "content": "hi"}]] * 2
