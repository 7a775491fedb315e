"""A worker process of `workbench proxy --workers N` (workbench.engine.http.fleet): a proxy
on the shared port whose channel is the pipe to the recording process it was given."""

from __future__ import annotations

from pathlib import Path

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
    proxy.serve_forever()
    return 0
