"""The `ChatModel` protocol every model client implements, and what a call streams back.

A client only talks to its model: it never writes traces. It yields `StreamItem`s, raw and
in order; `agent_core.model.recording.RecordingModel` turns them into trace events. The
assembled message at the end comes from the one shared assembler, whatever the transport.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

from agent_core.wire.answer import AssembledResponse
from agent_core.wire.spans import WireSpan

# How much of a server's error text is kept, in the trace and on screen: enough for a
# validation error that lists several fields (the part naming the cause comes late).
ERROR_TEXT_CHARS = 4000


@dataclass(frozen=True)
class ModelCall:
    """Exactly what is sent to the model for one turn (OpenAI chat-completions shapes)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    stream: bool = True
    # The history's own wire form where it is known (`agent_core.wire.spans`): a client of
    # that format sends those spans as they were in place of the messages they read as.
    wire: tuple[WireSpan, ...] = ()


@dataclass(frozen=True)
class AttemptStarted:
    attempt: int


@dataclass(frozen=True)
class RawChunk:
    attempt: int
    index: int
    elapsed_ms: float
    data: dict[str, Any]
    text_delta: str = ""  # visible text this chunk added, for live printing


@dataclass(frozen=True)
class AttemptFailed:
    attempt: int
    kind: str  # e.g. connection, status, timeout, stream_error, bad_response
    message: str
    retriable: bool
    status_code: int | None = None
    will_retry: bool = False


@dataclass(frozen=True)
class Completed:
    attempt: int
    response: AssembledResponse
    ttft_ms: float | None
    latency_ms: float
    chunks: int


StreamItem: TypeAlias = AttemptStarted | RawChunk | AttemptFailed | Completed

# A hook wraps the model call: it receives the call and the next stream in the chain, and
# returns a stream of what the next one would (authorisation, mocking, replay).
ModelStream: TypeAlias = Callable[[ModelCall], AsyncIterator[StreamItem]]
ModelHook: TypeAlias = Callable[[ModelCall, ModelStream], AsyncIterator[StreamItem]]


@dataclass(frozen=True)
class TextDelta:
    """Visible model text as it streams; shown live, not recorded (chunks are)."""

    turn: int
    text: str


class ModelError(Exception):
    """The model call failed for good (retries exhausted or not retriable)."""

    def __init__(self, kind: str, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status_code = status_code


class ModelTimeout(ModelError):
    def __init__(self, message: str) -> None:
        super().__init__("timeout", message)


class ModelCallStopped(ModelError):
    """A model hook's decision not to call the model at all (a fork with no recorded result
    to go on); the run ends with `message` as its reason, not as a failed model call."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(kind, message)


@runtime_checkable
class ChatModel(Protocol):
    """Anything that answers chat-completion calls: real endpoint, scripted, replayed."""

    name: str
    base_url: str | None

    def stream(self, call: ModelCall) -> AsyncIterator[StreamItem]:
        """Yield the attempt's items; end with `Completed` or raise `ModelError`."""
        ...
