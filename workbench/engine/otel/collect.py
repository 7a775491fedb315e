"""`workbench collect`: an OTLP/HTTP trace receiver (aiohttp) that writes runs.

`POST /v1/traces` takes an export request as protobuf (`application/x-protobuf`) or OTLP
JSON (`application/json`), gzip or not, and answers as OTLP asks (an empty
ExportTraceServiceResponse in the request's encoding; 400 for a payload that is not one,
415 for another content type). Spans wait per trace until the trace's root span arrives
(exporters send a span when it ends, so the root comes last), then the trace is written as
a run by `ingest`. Traces still waiting when the receiver stops are written as they
are; while they wait their spans are also on disk, for a receiver killed before then.
`CollectorThread` runs it in the background, for tests and embedding.

Needs the `otel` extra; imported only by the commands that use it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from workbench.engine.otel.ingest import (
    ImportedRun,
    OtlpError,
    parse_json,
    parse_protobuf,
    write_run,
)
from workbench.engine.otel.runs import SpanEventRecord, SpanRecord

TRACES_PATH = "/v1/traces"
# OTLP names the first; some clients send the second.
PROTOBUF_TYPES = ("application/x-protobuf", "application/protobuf")
MAX_BODY = 64 * 1024 * 1024

RunCallback = Callable[[ImportedRun], None]
ProblemCallback = Callable[[str], None]


PENDING_DIR = "otel-pending"


class OtlpReceiver:
    """The receiving side: payloads in, runs written under `home`.

    Spans waiting for their trace's root are also appended to
    `<home>/otel-pending/<trace id>.jsonl`, so a receiver that is killed loses nothing: the
    next one starts with them, and the file goes once the run is written."""

    def __init__(
        self,
        home: Path,
        on_run: RunCallback | None = None,
        on_problem: ProblemCallback | None = None,
    ) -> None:
        self.home = home
        self.on_run = on_run
        self.on_problem = on_problem
        self.pending: dict[str, list[SpanRecord]] = {}
        self.runs: list[ImportedRun] = []
        self.spans_received = 0
        self._lock = threading.Lock()
        self._spool = home / PENDING_DIR
        for path in sorted(self._spool.glob("*.jsonl")):
            with path.open(encoding="utf-8") as handle:
                spans = [_span_of_line(line) for line in handle if line.endswith("\n")]
            self.pending[path.stem] = [span for span in spans if span is not None]

    def take(self, spans: list[SpanRecord]) -> None:
        with self._lock:
            self.spans_received += len(spans)
            complete: list[str] = []
            by_trace: dict[str, list[SpanRecord]] = {}
            for span in spans:
                by_trace.setdefault(span.trace_id, []).append(span)
                if span.parent_id is None:
                    complete.append(span.trace_id)
            for trace_id, received in by_trace.items():
                self.pending.setdefault(trace_id, []).extend(received)
                if trace_id not in complete:
                    self._keep(trace_id, received)
            for trace_id in dict.fromkeys(complete):
                self._write(self.pending.pop(trace_id))

    def flush(self) -> None:
        """Write every trace still waiting for its root span."""
        with self._lock:
            pending, self.pending = self.pending, {}
            for spans in pending.values():
                self._write(spans)

    def _keep(self, trace_id: str, spans: list[SpanRecord]) -> None:
        self._spool.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps(dataclasses.asdict(span)) + "\n" for span in spans)
        with (self._spool / f"{trace_id}.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(lines)

    def _write(self, spans: list[SpanRecord]) -> None:
        try:
            run = write_run(self.home, spans)
        except OtlpError as exc:
            self._problem(str(exc))
            run = None
        (self._spool / f"{spans[0].trace_id}.jsonl").unlink(missing_ok=True)
        if run is None:
            return
        self.runs.append(run)
        if self.on_run is not None:
            self.on_run(run)

    def _problem(self, message: str) -> None:
        if self.on_problem is not None:
            self.on_problem(message)

    async def handle(self, request: web.Request) -> web.Response:
        content_type = request.content_type
        body = await request.read()
        try:
            if content_type in PROTOBUF_TYPES:
                spans = parse_protobuf(body)
            elif content_type == "application/json":
                try:
                    document = json.loads(body)
                except ValueError:
                    raise OtlpError("not valid JSON") from None
                spans = parse_json(document)
            else:
                message = f"content type {content_type!r}: send application/x-protobuf or json"
                self._problem(f"refused a request: {message}")
                return web.json_response({"message": message}, status=415)
            await asyncio.to_thread(self.take, spans)
        except OtlpError as exc:
            self._problem(f"refused a request: {exc}")
            return web.json_response({"code": 3, "message": str(exc)}, status=400)
        if content_type == "application/json":
            return web.json_response({})
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post(TRACES_PATH, self.handle)
        return app


def _span_of_line(line: str) -> SpanRecord | None:
    try:
        fields = json.loads(line)
        events = [SpanEventRecord(**event) for event in fields.pop("events", [])]
        return SpanRecord(**fields, events=events)
    except (ValueError, TypeError, AttributeError):  # a line cut short by a kill
        return None


class CollectorError(Exception):
    """The receiver cannot start; one line saying why."""


async def start(receiver: OtlpReceiver, host: str, port: int) -> tuple[web.AppRunner, int]:
    """Serve `receiver` on host:port (0 picks a free port); returns the runner and port."""
    runner = web.AppRunner(receiver.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        raise CollectorError(
            f"cannot listen on {host}:{port} ({why}); pick another --port"
        ) from None
    return runner, int(runner.addresses[0][1])


class CollectorThread:
    """The receiver on a background thread's event loop, until `close`.

    with CollectorThread(home) as collector:
        export_to(collector.endpoint)
        collector.wait_for_runs(3)
    """

    def __init__(self, home: Path, host: str = "127.0.0.1", port: int = 0) -> None:
        self._changed = threading.Condition()
        self.receiver = OtlpReceiver(home, on_run=self._ran, on_problem=self._problem)
        self.problems: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.host = host
        self._thread = threading.Thread(target=self._run, args=(port,), daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}{TRACES_PATH}"

    def _run(self, port: int) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._runner, self.port = self._loop.run_until_complete(
                start(self.receiver, self.host, port)
            )
        except BaseException as exc:  # handed to the starting thread
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        if self._runner is not None:
            self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    def _ran(self, run: ImportedRun) -> None:
        with self._changed:
            self._changed.notify_all()

    def _problem(self, message: str) -> None:
        with self._changed:
            self.problems.append(message)
            self._changed.notify_all()

    def wait_for_runs(self, count: int, timeout_s: float = 30.0) -> list[ImportedRun]:
        """Block until `count` runs were written; raises TimeoutError otherwise."""
        with self._changed:
            if not self._changed.wait_for(
                lambda: len(self.receiver.runs) >= count or bool(self.problems), timeout_s
            ):
                raise TimeoutError(f"{len(self.receiver.runs)} of {count} runs arrived")
        if self.problems:
            raise AssertionError(self.problems[0])
        return list(self.receiver.runs)

    def close(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self.receiver.flush()

    def __enter__(self) -> CollectorThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
