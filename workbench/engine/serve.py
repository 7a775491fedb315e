"""`workbench serve-model`: a recorded run (or a model script) as an OpenAI-compatible endpoint.

`ReplayResponder` answers each chat-completion request with the recorded answer of the turn
whose recorded request it matches (messages, tools and params), so any OpenAI client, not
only ours, can be replayed in its own tests. A request that matches no turn gets HTTP 409
with a JSON body listing how it differs from the turn the recording expected next.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_core.model.assembler import chunk_from_completion
from agent_core.model.script import ScriptError
from workbench.engine.compare import FieldDiff, diff_values
from workbench.engine.http_server import DEFAULT_MAX_REQUEST_BYTES
from workbench.engine.model_server import ModelServer, Reply, Responder, ScriptResponder
from workbench.engine.recording_io import Recording, TurnRecord
from workbench.engine.replay_model import is_completion

# Request keys that describe the transport, not the conversation; clients differ in them.
TRANSPORT_KEYS = frozenset({"model", "messages", "tools", "stream", "stream_options"})


class ServeError(Exception):
    """The server cannot start; one line saying why."""


def _without_nulls(value: Any) -> Any:
    # Clients differ in sending `"content": null` or leaving the key out; both mean the same.
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def request_of_body(body: dict[str, Any]) -> dict[str, Any]:
    params = {k: v for k, v in body.items() if k not in TRANSPORT_KEYS}
    view = {"messages": body.get("messages") or [], "tools": body.get("tools") or []}
    return _without_nulls({**view, "params": params})


def request_of_turn(record: TurnRecord) -> dict[str, Any]:
    request = record.request
    assert request is not None
    view = {"messages": request.messages, "tools": request.tools, "params": request.params}
    return _without_nulls(json.loads(json.dumps(view)))


class ReplayResponder:
    """Serves the recorded answers of a run, one model turn per matching request."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.turns = [recording.turns[n] for n in recording.model_turns]
        self._expected = [request_of_turn(record) for record in self.turns]
        self._next = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        got = request_of_body(body)
        with self._lock:
            position = self._match(got)
            if position is None:
                return self._mismatch(got)
            self._next = position + 1
        return self._answer(self.turns[position], stream=bool(body.get("stream")))

    def _match(self, got: dict[str, Any]) -> int | None:
        # The expected turn first; any other turn too, so a client may start over or retry.
        order = [self._next, *range(len(self.turns))]
        for position in order:
            if position < len(self.turns) and self._expected[position] == got:
                return position
        return None

    def _mismatch(self, got: dict[str, Any]) -> Reply:
        position = min(self._next, len(self.turns) - 1)
        if position < 0:
            message = f"run {self.recording.run_id} has no model turn to replay"
            diffs: list[FieldDiff] = []
            turn = None
        else:
            turn = self.turns[position].turn
            diffs = diff_values(self._expected[position], got)
            first = diffs[0].path if diffs else "(nothing)"
            message = (
                f"request does not match turn {turn} of run {self.recording.run_id}: "
                f"first difference at {first}"
            )
        body = {
            "error": {
                "message": message,
                "type": "replay_mismatch",
                "run_id": self.recording.run_id,
                "turn": turn,
                "diffs": [diff.to_json() for diff in diffs],
            }
        }
        # The OpenAI SDK retries 409 unless told not to; a mismatch will not go away.
        return Reply(status=409, body=body, headers={"x-should-retry": "false"})

    def _answer(self, record: TurnRecord, *, stream: bool) -> Reply:
        response = record.response
        if response is None:
            error = record.model_errors[-1] if record.model_errors else None
            message = error.message if error else "the recording has no answer for this turn"
            return Reply(
                status=(error.status_code if error and error.status_code else 500),
                body={"error": {"message": message, "type": "recorded_error"}},
                headers={"x-should-retry": "false"},
            )
        recorded = [chunk.data for chunk in record.chunks.get(response.attempt, [])]
        completion = len(recorded) == 1 and is_completion(recorded[0])
        if stream:
            chunks: list[dict[str, Any] | str] = [
                _as_stream_chunk(data) if is_completion(data) else data for data in recorded
            ]
            return Reply(chunks=chunks, done=True)
        if completion:
            return Reply(body=recorded[0])
        return Reply(body=self._completion(record))

    def _completion(self, record: TurnRecord) -> dict[str, Any]:
        response = record.response
        assert response is not None
        first = record.chunks.get(response.attempt, [None])[0]
        body: dict[str, Any] = {
            "id": first.data.get("id", "chatcmpl-replay") if first else "chatcmpl-replay",
            "object": "chat.completion",
            "created": first.data.get("created", 0) if first else 0,
            "model": self.recording.run_start.model,
            "choices": [
                {
                    "index": 0,
                    "message": response.message,
                    "finish_reason": response.finish_reason,
                }
            ],
        }
        if response.usage is not None:
            body["usage"] = response.usage
        return body


def _as_stream_chunk(completion: dict[str, Any]) -> dict[str, Any]:
    chunk = chunk_from_completion(completion)
    chunk["object"] = "chat.completion.chunk"
    return chunk


def responder_for(source: Recording | Path) -> tuple[Responder, str]:
    """The responder and the model name to serve, for a recording or a script file."""
    if isinstance(source, Recording):
        if not source.model_turns:
            raise ServeError(f"run {source.run_id} has no model turn to serve")
        return ReplayResponder(source), source.run_start.model
    try:
        responder = ScriptResponder.from_file(source)
    except ScriptError as exc:
        raise ServeError(str(exc)) from None
    return responder, responder.model


def serve_forever(
    source: Recording | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve until Ctrl-C (KeyboardInterrupt propagates after the socket is closed).
    Requests are answered and forgotten: the server keeps no request bodies."""
    responder, model = responder_for(source)
    try:
        server = ModelServer(
            responder,
            host=host,
            port=port,
            model=model,
            keep_requests=False,
            max_request_bytes=max_request_bytes,
        )
    except OSError as exc:
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    server.serve_forever(None if on_ready is None else lambda: on_ready(server.base_url))
