"""A worker process of `workbench proxy --workers N` (workbench.engine.http.fleet): a proxy
on the shared port whose channel is the pipe to the recording process it was given."""

from __future__ import annotations

import os
from pathlib import Path

from workbench.engine.http.fleet import LISTENING
from workbench.engine.http.proxy import RecordingProxy


def worker_main(argv: list[str]) -> int:
    """Serve until stopped (a signal to it, or to its process group)."""
    fd, index, stride, host, port, upstream, anthropic, max_bytes, timeout = argv
    proxy = RecordingProxy(
        upstream,
        Path("."),
        host=host,
        port=int(port),
        max_request_bytes=int(max_bytes),
        read_timeout_s=float(timeout),
        anthropic_upstream=anthropic or None,
        worker=(int(fd), int(index), int(stride)),
    )
    proxy.serve_forever(_say_listening)
    return 0


def _say_listening() -> None:
    """The proxy that started this worker says it is ready once every worker said this."""
    os.write(1, f"{LISTENING}\n".encode())
