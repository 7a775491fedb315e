"""A real OpenAI-compatible HTTP server on 127.0.0.1, for tests and `workbench serve-model`.

It speaks `/v1/chat/completions` (SSE when the reply has chunks, JSON otherwise) and
`/v1/models`. What each request gets back is decided by a responder, `responder(body) ->
Reply`: chunks to stream (dicts, or raw SSE lines written verbatim so captured streams replay
byte-faithfully), a JSON body, an error status with headers, a stall, or a connection that
drops mid-stream. Every request received is kept in `server.requests`.

    with ModelServer(ScriptResponder(steps)) as server:
        model = OpenAIChatModel(server.base_url, "key", "scripted")

Standard library only (`ThreadingHTTPServer`), run in a background thread.
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeAlias

from agent_core.model.base import ModelCall
from agent_core.model.script import (
    Script,
    ScriptExhaustedError,
    ScriptStep,
    error_body,
    load_script,
    step_chunks,
    step_completion,
    used_call_ids,
)

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
MODELS_PATHS = ("/v1/models", "/models")


@dataclass
class Reply:
    """What the server sends for one request.

    `chunks` set: a 200 `text/event-stream` (dicts become `data: <json>` events, strings are
    raw SSE lines written as they are). Otherwise `body` is sent as JSON with `status`.
    `stall_after=N` goes silent after N chunks (for a JSON reply: before anything) until the
    client gives up or the server closes; `drop_after=N` closes the connection there instead.
    """

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[dict[str, Any] | str] | None = None
    body: Any = None
    done: bool = False  # end the stream with `data: [DONE]`
    data_prefix: str = "data: "  # "data:" reproduces servers that omit the space
    delay_s: float = 0.0  # before the first byte
    chunk_delay_s: float = 0.0
    stall_after: int | None = None
    drop_after: int | None = None


Responder: TypeAlias = Callable[[dict[str, Any]], Reply]


@dataclass(frozen=True)
class ReceivedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (a timeout, a cancelled run) is routine, not a crash.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Streamed replies are many small writes; Nagle's algorithm would hold each one ~40 ms.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # tests and the CLI print their own lines

    def do_GET(self) -> None:
        owner = self.server.owner
        if self.path.split("?")[0] in MODELS_PATHS:
            model = {"id": owner.model, "object": "model", "created": 0, "owned_by": "workbench"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw or b"null")
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        headers = {name.lower(): value for name, value in self.headers.items()}
        owner._record(ReceivedRequest(self.path, headers, body))
        if self.path.split("?")[0] not in CHAT_PATHS:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        if not isinstance(body, dict):
            self._send_json(400, {"error": {"message": "request body is not a JSON object"}})
            return
        try:
            reply = owner.responder(body)
        except Exception as exc:  # a broken responder is a 500, not a dead server thread
            self._send_json(500, {"error": {"message": f"responder failed: {exc}"}})
            return
        try:
            self._send_reply(reply)
        except OSError:
            self.close_connection = True  # the client went away; nothing left to tell it

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_reply(self, reply: Reply) -> None:
        closing = self.server.owner.closing
        if reply.delay_s and closing.wait(reply.delay_s):
            return
        if reply.chunks is None:
            if reply.stall_after is not None:
                closing.wait()
                self._drop()
            elif reply.drop_after is not None:
                self._drop()
            else:
                self._send_json(reply.status, reply.body, reply.headers)
            return
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()
        for sent, chunk in enumerate(reply.chunks):
            if sent == reply.stall_after:
                closing.wait()
                self._drop()
                return
            if sent == reply.drop_after:
                self._drop()
                return
            if sent and reply.chunk_delay_s and closing.wait(reply.chunk_delay_s):
                return
            self._write_chunk(_sse_bytes(chunk, reply.data_prefix))
        count = len(reply.chunks)
        if reply.stall_after is not None and reply.stall_after >= count:
            closing.wait()
            self._drop()
            return
        if reply.drop_after is not None and reply.drop_after >= count:
            self._drop()
            return
        if reply.done:
            self._write_chunk(f"{reply.data_prefix}[DONE]\n\n".encode())
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _drop(self) -> None:
        """Close the socket mid-response: the client sees an incomplete body."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _sse_bytes(chunk: dict[str, Any] | str, data_prefix: str) -> bytes:
    if isinstance(chunk, str):
        # Raw lines (comments, `event:` fields, `data: [DONE]`) go out verbatim; a data line
        # also ends its event.
        return (chunk + ("\n\n" if chunk.startswith("data") else "\n")).encode()
    return f"{data_prefix}{json.dumps(chunk, ensure_ascii=False)}\n\n".encode()


class ModelServer:
    """An OpenAI-compatible server in a background thread; use as a context manager."""

    def __init__(
        self,
        responder: Responder,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model: str = "scripted",
    ) -> None:
        self.responder = responder
        self.model = model
        self.requests: list[ReceivedRequest] = []
        self.closing = threading.Event()
        self._lock = threading.Lock()
        self._httpd = _Server((host, port), _Handler)
        self._httpd.owner = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def bodies(self) -> list[Any]:
        """The chat-completion request bodies received, in order."""
        with self._lock:
            return [r.body for r in self.requests if r.path.split("?")[0] in CHAT_PATHS]

    def _record(self, request: ReceivedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def start(self) -> ModelServer:
        self._thread = threading.Thread(
            # A short poll keeps close() quick; shutdown waits for one poll.
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="model-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until `close()` (or Ctrl-C) — for the CLI."""
        try:
            self._httpd.serve_forever()
        finally:
            self.closing.set()
            self._httpd.server_close()

    def close(self) -> None:
        self.closing.set()  # releases stalled replies
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class ScriptResponder:
    """Answers each request with the next matching step of a model script
    (docs/script-format.md): the same steps `ScriptedModel` follows in process."""

    def __init__(
        self, steps: Script | list[ScriptStep | dict[str, Any]], *, model: str = "scripted"
    ) -> None:
        self.script = steps if isinstance(steps, Script) else Script(steps)
        self.model = model
        self._numbers = itertools.count(1)

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptResponder:
        """Load a JSON or TOML script; raises `ScriptError` with a one-line message."""
        steps, settings = load_script(path)
        return cls(list(steps), model=str(settings.get("name") or "scripted"))

    def __call__(self, body: dict[str, Any]) -> Reply:
        number = next(self._numbers)
        call = ModelCall(
            messages=list(body.get("messages") or []),
            tools=list(body.get("tools") or []),
            stream=bool(body.get("stream")),
        )
        try:
            step = self.script.next_step(call)
        except ScriptExhaustedError as exc:
            # 410 is never retried, so the client stops at once with this message.
            return Reply(
                status=410, body={"error": {"message": str(exc), "type": "script_exhausted"}}
            )
        delay_s = step.delay_ms / 1000.0
        if step.error is not None:
            return _error_reply(step, delay_s)
        response_id = f"chatcmpl-{self.model}-{number}"
        taken = used_call_ids(call.messages)
        if call.stream:
            chunks: list[dict[str, Any] | str] = list(
                step_chunks(
                    step,
                    model=self.model,
                    response_id=response_id,
                    call_number=number,
                    taken=taken,
                )
            )
            return Reply(chunks=chunks, done=True, delay_s=delay_s)
        completion = step_completion(
            step, model=self.model, response_id=response_id, call_number=number, taken=taken
        )
        return Reply(body=completion, delay_s=delay_s)


def _error_reply(step: ScriptStep, delay_s: float) -> Reply:
    error = step.error
    assert error is not None
    kind = error.effective_kind()
    if kind == "timeout":
        return Reply(stall_after=0, delay_s=delay_s)
    if kind == "connection":
        return Reply(drop_after=0, delay_s=delay_s)
    if kind == "stream_error":
        return Reply(chunks=[error_body(error)], delay_s=delay_s)
    headers = {"Retry-After": f"{error.retry_after:g}"} if error.retry_after is not None else {}
    return Reply(
        status=error.status or 500, headers=headers, body=error_body(error), delay_s=delay_s
    )
