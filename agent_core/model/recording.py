"""`RecordingModel`: wraps any `ChatModel` and turns what it streams into trace events.

Clients never write traces; this wrapper does, through the run's `Recorder`:
    AttemptStarted -> model_request (exact messages, tools, params, stream flag; the wire
                      format and body when the client speaks another format than chat)
    RawChunk       -> model_chunk, plus a `TextDelta` pushed for any visible text
    AttemptFailed  -> error (where="model")
    Completed      -> model_response
Every item is re-yielded unchanged so the loop still sees the stream. The turn comes from
`recorder.turn`, which the loop sets. The loop passes its prompt estimate per call:

    async for item in recording.stream(call, estimated_tokens=estimate): ...

(when the call goes through hooks, bind it with `functools.partial`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast

from agent_core.model.base import (
    AttemptFailed,
    AttemptStarted,
    ChatModel,
    Completed,
    ModelCall,
    RawChunk,
    StreamItem,
    TextDelta,
)
from agent_core.wire.codecs import codec_for
from traces.events import Error, ModelApi, ModelChunk, ModelRequest, ModelResponse
from traces.recorder import Recorder

# The loop built these messages itself and checked them before the call, so the request
# event takes them without validation: validating copied the whole history on every turn,
# and keeping the very message dicts lets the JSONL writer reuse each one's serialized text.
# (Events read back from disk are still validated.)
_trusted_request = cast(type[ModelRequest], ModelRequest.model_construct)


class RecordingModel:
    def __init__(self, inner: ChatModel, recorder: Recorder) -> None:
        self.inner = inner
        self.recorder = recorder
        self.name = inner.name
        self.base_url = inner.base_url

    async def stream(
        self, call: ModelCall, *, estimated_tokens: int = 0
    ) -> AsyncIterator[StreamItem]:
        recorder = self.recorder
        async for item in self.inner.stream(call):
            if isinstance(item, RawChunk):
                recorder.emit(
                    ModelChunk,
                    attempt=item.attempt,
                    index=item.index,
                    elapsed_ms=item.elapsed_ms,
                    data=item.data,
                )
                if item.text_delta:
                    recorder.push(TextDelta(recorder.turn or 0, item.text_delta))
            elif isinstance(item, AttemptStarted):
                # A client of another wire format than chat says so, and what it sends
                # (unless its messages are the body).
                api: ModelApi = getattr(self.inner, "api", "chat")
                wire_body = getattr(self.inner, "wire_body", None)
                recorder.emit(
                    _trusted_request,
                    attempt=item.attempt,
                    api=api,
                    body=wire_body(call) if wire_body and codec_for(api).keeps_body else None,
                    messages=list(call.messages),
                    tools=list(call.tools),
                    params=dict(call.params),
                    stream=call.stream,
                    estimated_tokens=estimated_tokens,
                )
            elif isinstance(item, AttemptFailed):
                recorder.emit(
                    Error,
                    where="model",
                    kind=item.kind,
                    message=item.message,
                    retriable=item.retriable,
                    attempt=item.attempt,
                    status_code=item.status_code,
                )
            elif isinstance(item, Completed):
                response = item.response
                recorder.emit(
                    ModelResponse,
                    attempt=item.attempt,
                    message=response.to_message(),
                    finish_reason=response.finish_reason,
                    usage=response.usage,
                    ttft_ms=item.ttft_ms,
                    latency_ms=item.latency_ms,
                    chunks=item.chunks,
                )
            yield item
