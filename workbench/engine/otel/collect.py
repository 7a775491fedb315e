"""`workbench collect`: an OTLP/HTTP trace receiver (aiohttp) that writes runs.

`POST /v1/traces` takes an export request as protobuf (`application/x-protobuf`) or OTLP
JSON (`application/json`), gzip, deflate or neither, and answers as OTLP asks (an empty
ExportTraceServiceResponse in the request's encoding; 400 for a payload that is not one,
415 for another content type or encoding, 413 past the body limit as sent or inflated:
`workbench.engine.otel.bodies`), with one line to `on_problem` and never a traceback.
Spans wait per trace until the trace's root span arrives (exporters send a span when it
ends, so the root comes last), then the trace is written as a run by `ingest`. Traces still
waiting when the receiver stops are written as they are, in the server's cleanup, where a
second Ctrl-C stops it after the trace being written; while they wait their spans are also
on disk, for a receiver killed or hurried before then. How many wait, and for how long, is
bounded (`OtlpReceiver`). `Collector` serves it on the workbench's one server runner
(`workbench.engine.serving`: the request limits, SIGTERM and Ctrl-C), in the calling
thread or in the background.

Needs the `otel` extra; imported only by the commands that use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from traces.home import RedactionConfigError
from workbench.engine.otel.bodies import (
    ENCODINGS,
    LOGS_PATH,
    METRICS_PATH,
    PROTOBUF_TYPES,
    RESPONSES,
    TRACES_PATH,
    Received,
    spans_of_body,
)

# What the tests and the CLI read here.
from workbench.engine.otel.bodies import MAX_BODY as MAX_BODY
from workbench.engine.otel.bodies import BodyError as BodyError
from workbench.engine.otel.bodies import decompressed as decompressed
from workbench.engine.otel.ingest import ImportedRun, OtlpError, SkippedTrace, write_run
from workbench.engine.otel.logs import starts_a_prompt
from workbench.engine.otel.spans import SpanEventRecord, SpanRecord
from workbench.engine.serving import (
    DEFAULT_READ_TIMEOUT_S,
    HttpServer,
    HttpService,
    finish_or_hurry,
)

# Traces waiting for their root span: past either count the longest-waiting is written as
# it is; so is a trace that has had no new span for the timeout (docs/otel.md).
MAX_PENDING_TRACES = 1_000
MAX_PENDING_SPANS = 100_000
PENDING_TIMEOUT_S = 300.0
_WRITTEN_EARLY_KEPT = 10 * MAX_PENDING_TRACES

RunCallback = Callable[[ImportedRun], None]
SkipCallback = Callable[[SkippedTrace], None]
ProblemCallback = Callable[[str], None]


PENDING_DIR = "otel-pending"


class OtlpReceiver:
    """The receiving side: payloads in, runs written under `home`.

    Spans waiting for their trace's root are also appended to
    `<home>/otel-pending/<trace id>.jsonl`, so a receiver that is killed loses nothing: the
    next one starts with them, and the file goes once the run is written. At most
    `max_pending_traces` traces and `max_pending_spans` spans wait, and none longer than
    `pending_timeout_s` after its last span; past that a trace is written as it is. A body
    may inflate to `max_body` bytes."""

    def __init__(
        self,
        home: Path,
        on_run: RunCallback | None = None,
        on_problem: ProblemCallback | None = None,
        *,
        on_note: ProblemCallback | None = None,
        on_skip: SkipCallback | None = None,
        max_pending_traces: int = MAX_PENDING_TRACES,
        max_pending_spans: int = MAX_PENDING_SPANS,
        pending_timeout_s: float = PENDING_TIMEOUT_S,
        max_body: int = MAX_BODY,
    ) -> None:
        self.home = home
        self.max_body = max_body
        self.on_run = on_run
        self.on_problem = on_problem
        self.on_note = on_note
        self.on_skip = on_skip
        self.max_pending_traces = max_pending_traces
        self.max_pending_spans = max_pending_spans
        self.pending_timeout_s = pending_timeout_s
        # Longest-waiting first: a trace moves to the end when a span of it arrives.
        self.pending: OrderedDict[str, list[SpanRecord]] = OrderedDict()
        self._last_seen: dict[str, float] = {}  # time.monotonic() of each one's last span
        self._pending_spans = 0
        # Traces written before their root came, the latest, to say so of spans that follow.
        self._written_early: OrderedDict[str, None] = OrderedDict()
        self.runs: list[ImportedRun] = []
        self.skipped: list[SkippedTrace] = []
        self.spans_received = 0
        self.logs_received = 0  # every log record; those kept wait with their trace's spans
        self.logs_late = 0  # kept ones that came after their trace's run was written
        self.metric_points = 0
        # Traces written lately, to say so of log records that follow them.
        self._written: OrderedDict[str, None] = OrderedDict()
        # Claude Code session -> its prompts' traces still waiting: a new prompt ends them.
        self._sessions: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._decoding = asyncio.Semaphore(2)  # made again by `app`, for its event loop
        self._spool = home / PENDING_DIR
        now, wall = time.monotonic(), time.time()
        spooled = sorted(self._spool.glob("*.jsonl"), key=lambda path: path.stat().st_mtime)
        for path in spooled:
            with path.open(encoding="utf-8") as handle:
                spans = [_span_of_line(line) for line in handle if line.endswith("\n")]
            self.pending[path.stem] = [span for span in spans if span is not None]
            self._pending_spans += len(self.pending[path.stem])
            self._last_seen[path.stem] = now - max(0.0, wall - path.stat().st_mtime)
        with self._lock:
            self._bound()

    def take(self, spans: list[SpanRecord], counts: Received | None = None) -> None:
        """Spans (and log records) received; `counts` says what their request held."""
        with self._lock:
            if counts is None:
                self.spans_received += len(spans)
            else:
                self.spans_received += counts.span_count
                self.logs_received += counts.log_count
                self.metric_points += counts.metric_points
            now = time.monotonic()
            complete: list[str] = []
            by_trace: dict[str, list[SpanRecord]] = {}
            late: dict[str, int] = {}
            for span in spans:
                if (
                    span.signal == "log"
                    and span.trace_id in self._written
                    and span.trace_id not in self.pending
                ):
                    late[span.trace_id] = late.get(span.trace_id, 0) + 1
                    continue
                by_trace.setdefault(span.trace_id, []).append(span)
                if span.parent_id is None:
                    complete.append(span.trace_id)
                session = starts_a_prompt(span)
                if session is not None:
                    complete += [t for t in self._sessions.pop(session, []) if t != span.trace_id]
                    self._sessions[session] = [span.trace_id]
                    if len(self._sessions) > _WRITTEN_EARLY_KEPT:
                        self._sessions.pop(next(iter(self._sessions)))
            for trace_id, received in by_trace.items():
                self.pending.setdefault(trace_id, []).extend(received)
                self.pending.move_to_end(trace_id)
                self._last_seen[trace_id] = now
                self._pending_spans += len(received)
                if trace_id not in complete:
                    self._keep(trace_id, received)
            for trace_id in dict.fromkeys(complete):
                if trace_id in self.pending:
                    self._write(self._pop(trace_id))
            self._bound()
            for trace_id, count in late.items():
                self.logs_late += count
                self._note(
                    f"trace {trace_id[:12]}: {count} log record(s) came after its run was "
                    "written; counted, not added"
                )

    def expire(self) -> None:
        """Write the traces that have had no new span for `pending_timeout_s`."""
        with self._lock:
            deadline = time.monotonic() - self.pending_timeout_s
            while self.pending:
                trace_id = next(iter(self.pending))
                if self._last_seen[trace_id] > deadline:
                    break
                self._early(
                    trace_id,
                    f"no new span for {self.pending_timeout_s:g} s (--pending-timeout)",
                )

    def flush(self, stop: Callable[[], bool] = lambda: False) -> None:
        """Write every trace still waiting for its root span, one at a time until `stop()`;
        those left wait on (in the spool too)."""
        with self._lock:
            while self.pending and not stop():
                self._write(self._pop(next(iter(self.pending))))

    def _bound(self) -> None:
        while len(self.pending) > self.max_pending_traces:
            self._early(
                next(iter(self.pending)),
                f"over {self.max_pending_traces} traces were waiting (--max-pending)",
            )
        while self._pending_spans > self.max_pending_spans and self.pending:
            self._early(
                next(iter(self.pending)), f"over {self.max_pending_spans} spans were waiting"
            )

    def _early(self, trace_id: str, why: str) -> None:
        spans = self._pop(trace_id)
        self._note(
            f"trace {trace_id}: {len(spans)} span(s) written as a run before its root span "
            f"arrived: {why}"
        )
        self._write(spans)
        self._written_early[trace_id] = None
        if len(self._written_early) > _WRITTEN_EARLY_KEPT:
            self._written_early.popitem(last=False)

    def _pop(self, trace_id: str) -> list[SpanRecord]:
        spans = self.pending.pop(trace_id)
        del self._last_seen[trace_id]
        self._pending_spans -= len(spans)
        return spans

    def _keep(self, trace_id: str, spans: list[SpanRecord]) -> None:
        self._spool.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps(dataclasses.asdict(span)) + "\n" for span in spans)
        with (self._spool / f"{trace_id}.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(lines)

    def _write(self, spans: list[SpanRecord]) -> None:
        trace_id = spans[0].trace_id
        if trace_id in self._written_early:
            self._note(
                f"trace {trace_id}: {len(spans)} span(s) came after its run was written "
                "without them; not added"
            )
            (self._spool / f"{trace_id}.jsonl").unlink(missing_ok=True)
            return
        try:
            run = write_run(self.home, spans)
        except OtlpError as exc:
            self._problem(str(exc))
            run = None
        except (RedactionConfigError, OSError) as exc:  # its spans stay in the spool
            self._problem(f"trace {trace_id}: not written: {exc}")
            return
        (self._spool / f"{trace_id}.jsonl").unlink(missing_ok=True)
        self._written[trace_id] = None
        if len(self._written) > _WRITTEN_EARLY_KEPT:
            self._written.popitem(last=False)
        if isinstance(run, SkippedTrace):
            self.skipped.append(run)
            if self.on_skip is not None:
                self.on_skip(run)
            return
        if run is None:
            return
        self.runs.append(run)
        if self.on_run is not None:
            self.on_run(run)

    def _problem(self, message: str) -> None:
        if self.on_problem is not None:
            self.on_problem(message)

    def _note(self, message: str) -> None:
        if self.on_note is not None:
            self.on_note(message)

    def refusal(self, status: int, message: str) -> web.Response:
        """The answer to a request refused (a `workbench.engine.serving.Refusal`), as OTLP
        answers, with one line to `on_problem`."""
        self._problem(f"refused a request: {message}")
        body = {"code": 3, "message": message}  # 3: INVALID_ARGUMENT, as OTLP answers
        return web.json_response(body, status=status)

    async def handle(self, request: web.Request) -> web.Response:
        try:
            return await self._answer(request)
        except web.HTTPException:
            raise
        except BodyError as exc:
            return self.refusal(exc.status, str(exc))
        except Exception as exc:  # a bug: one line, not a traceback; the receiver goes on
            self._problem(f"failed on a request: {type(exc).__name__}: {exc}")
            return web.json_response({"code": 13, "message": "internal error"}, status=500)

    async def _answer(self, request: web.Request) -> web.Response:
        content_type = request.content_type
        if content_type not in (*PROTOBUF_TYPES, "application/json"):
            message = f"content type {content_type!r}: send application/x-protobuf or json"
            raise BodyError(415, message)
        encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ENCODINGS:
            raise BodyError(415, f"content encoding {encoding[:40]!r}: send gzip or none")
        body = await request.read()  # read already, within the limits, by the server
        path = request.path
        # Inflating and parsing take a while for a big body: off the loop, which keeps
        # serving, and two at a time, which bounds the memory they take together.
        async with self._decoding:
            received = await asyncio.to_thread(
                spans_of_body, body, content_type, encoding, self.max_body, path
            )
        if received.spans or path == TRACES_PATH:
            await asyncio.to_thread(self.take, received.spans, received)
        else:
            with self._lock:
                self.logs_received += received.log_count
                self.metric_points += received.metric_points
        if content_type == "application/json":
            return web.json_response({})
        return web.Response(
            body=RESPONSES[path]().SerializeToString(),
            content_type="application/x-protobuf",
        )

    def summary(self) -> str:
        """What was received, for the line collect ends with."""
        parts = [f"{len(self.runs)} run(s) from {self.spans_received} span(s)"]
        if self.skipped:
            parts.append(f"{len(self.skipped)} trace(s) gave no run")
        if self.logs_received:
            parts.append(f"{self.logs_received} log record(s)")
        if self.metric_points:
            parts.append(f"{self.metric_points} metric point(s), counted only")
        return "; ".join(parts)

    async def _expire_waiting(self, app: web.Application) -> AsyncIterator[None]:
        # Checks often enough that a trace waits at most about a tenth longer than allowed.
        interval = min(max(self.pending_timeout_s / 10, 0.05), 10.0)

        async def every_interval() -> None:
            while True:
                await asyncio.sleep(interval)
                await asyncio.to_thread(self.expire)

        task = asyncio.create_task(every_interval())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def app(self) -> web.Application:
        self._decoding = asyncio.Semaphore(2)
        app = web.Application(client_max_size=self.max_body)
        for path in (TRACES_PATH, LOGS_PATH, METRICS_PATH):
            app.router.add_post(path, self.handle)
        app.cleanup_ctx.append(self._expire_waiting)
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


class Collector(HttpService):
    """The receiver served on a socket bound now: `serve_forever()` for the CLI, or
    `start()` in the background until `close`, which writes the traces still waiting.

    with Collector(home) as collector:
        export_to(collector.endpoint)
        collector.wait_for_runs(3)
    """

    def __init__(
        self,
        home: Path,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_request_bytes: int = MAX_BODY,
        read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
        on_run: RunCallback | None = None,
        on_problem: ProblemCallback | None = None,
        on_note: ProblemCallback | None = None,
        on_skip: SkipCallback | None = None,
        **limits: Any,
    ) -> None:
        """`limits`: OtlpReceiver's `max_pending_traces`, `max_pending_spans` and
        `pending_timeout_s`. Problems and notes are kept (`problems`, `notes`) and also
        handed to the callbacks."""
        self._changed = threading.Condition()
        self.problems: list[str] = []
        self.notes: list[str] = []
        self._callbacks = (on_run, on_problem, on_note)
        self.unwritten = 0  # traces a second signal left waiting, in the spool
        self._on_skip = on_skip
        self.receiver = OtlpReceiver(
            home,
            on_run=self._ran,
            on_problem=self._problem,
            on_note=self._note,
            on_skip=self._skip,
            max_body=max_request_bytes,
            **limits,
        )
        try:
            self._http = HttpServer(
                self._app,
                host=host,
                port=port,
                max_request_bytes=max_request_bytes,
                read_timeout_s=read_timeout_s,
                refuse=self.receiver.refusal,
                auto_decompress=False,  # `decompressed` inflates within the limit, off the loop
            )
        except OSError as exc:
            raise CollectorError(
                f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick another --port"
            ) from None
        self.host = host

    async def _app(self) -> web.Application:
        app = self.receiver.app()
        app.on_cleanup.append(self._write_waiting)
        return app

    async def _write_waiting(self, app: web.Application) -> None:
        # In the server's cleanup, where a second signal still reaches its handler (in a
        # `finally` after serving it was a KeyboardInterrupt in the middle of a write).
        stop = threading.Event()
        writing = asyncio.ensure_future(asyncio.to_thread(self.receiver.flush, stop.is_set))
        said = 0

        def say_waiting() -> None:
            nonlocal said
            said = len(self.receiver.pending)
            if said:
                waiting = f"{_traces(said)} still waiting for their root span"
                self._note(f"writing {waiting}… (Ctrl-C again stops without them)")

        if not await finish_or_hurry(writing, self._http.hurry, say_waiting):
            stop.set()  # after the trace being written
        await writing
        self.unwritten = len(self.receiver.pending)
        if self.unwritten:
            self._problem(
                f"stopped without writing {_traces(self.unwritten)} still waiting for their "
                f"root span; their spans stay in {self.receiver.home / PENDING_DIR}, for the "
                "next collect"
            )
        elif said:
            self._note(f"done: {_traces(said)} written")

    def lost(self) -> bool:
        return self.unwritten > 0

    @property
    def endpoint(self) -> str:
        return f"http://{self._http.address}{TRACES_PATH}"

    @property
    def base_url(self) -> str:
        """What OTEL_EXPORTER_OTLP_ENDPOINT takes: /v1/traces, /v1/logs and /v1/metrics
        are under it."""
        return f"http://{self._http.address}"

    def _ran(self, run: ImportedRun) -> None:
        with self._changed:
            self._changed.notify_all()
        if self._callbacks[0] is not None:
            self._callbacks[0](run)

    def _skip(self, skipped: SkippedTrace) -> None:
        with self._changed:
            self._changed.notify_all()
        if self._on_skip is not None:
            self._on_skip(skipped)

    def wait_until(self, done: Callable[[OtlpReceiver], bool], timeout_s: float = 30.0) -> None:
        """Block until `done(receiver)` holds after a run, a skipped trace, a problem or a
        note; raises TimeoutError otherwise."""
        with self._changed:
            if not self._changed.wait_for(lambda: done(self.receiver), timeout_s):
                raise TimeoutError("the collector never got there")

    def _problem(self, message: str) -> None:
        with self._changed:
            self.problems.append(message)
            self._changed.notify_all()
        if self._callbacks[1] is not None:
            self._callbacks[1](message)

    def _note(self, message: str) -> None:
        with self._changed:
            self.notes.append(message)
            self._changed.notify_all()
        if self._callbacks[2] is not None:
            self._callbacks[2](message)

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


def _traces(count: int) -> str:
    return f"{count} trace" + ("" if count == 1 else "s")
