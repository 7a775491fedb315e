"""The trace contract: every event an agent run records, one pydantic model per type.

Writer and reader share these models. `Event` is the discriminated union on `type`;
`EVENT_ADAPTER` validates one decoded JSON line into the right model.

Schema versions (bump `traces.versions.SCHEMA_VERSION` on any change of an event's shape,
add a migration there, add golden traces under tests/fixtures/traces/vN/, and regenerate the
store's copy of the validation schema with `python -m traces.line_schema`):
    1 — first release.
    2 — where a run came from (`run_start.origin`, `client`), tools left out or renamed
        (`run_start.tools_dropped`, `renamed_tools`, `tool_start.source_name`), tool calls
        a client ran (`tool_end.observed`), and `tools_changed` mid-run.
    3 — the wire format of each model call (`model_request.api`: chat completions, the
        Responses API or Anthropic Messages) and, for the two that are not chat, the exact
        request body (`model_request.body`) beside the normalized messages.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeAlias, TypeGuard, get_args

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, TypeAdapter, field_validator

# Re-exported: part of the contract's public names.
from traces.statuses import RUN_STATUSES as RUN_STATUSES
from traces.statuses import RunStatus as RunStatus
from traces.statuses import StoredStatus as StoredStatus
from traces.versions import SCHEMA_VERSION as SCHEMA_VERSION
from traces.versions import SCHEMA_VERSIONS as SCHEMA_VERSIONS


def is_run_status(value: object) -> TypeGuard[RunStatus]:
    """Whether `value` is a status a run can end with (`run_end.status`)."""
    return value in get_args(RunStatus)


TimeoutLayer: TypeAlias = Literal["model", "tool", "run"]
ErrorWhere: TypeAlias = Literal["model", "tool", "mcp", "history", "run"]
McpDirection: TypeAlias = Literal["send", "recv"]
# Where a run came from: the agent core, a fork of another run, a regression sample, an
# `mcp` command session, traffic captured by the proxy, or an OpenTelemetry import.
# The wire format of a model call: chat completions, the OpenAI Responses API, Anthropic
# Messages. Whatever the format, a model event's messages and tool calls are normalized to
# the chat-completions shape; the wire's own bodies and stream events are kept beside them.
ModelApi: TypeAlias = Literal["chat", "responses", "anthropic"]
MODEL_APIS: tuple[ModelApi, ...] = get_args(ModelApi)
RunOrigin: TypeAlias = Literal[
    "agent", "fork", "regression_sample", "mcp_session", "captured", "imported"
]


def utc_now() -> datetime:
    return datetime.now(UTC)


# The last whole second `ts_text` wrote in UTC, and its text up to the microseconds: events
# come many a second.
_last_second: tuple[tuple[int, ...], str] = ((), "")


def ts_text(ts: datetime) -> str:
    """How a trace writes a time: UTC, microseconds, `Z` (`2026-03-01T09:30:00.000000Z`)."""
    global _last_second
    if ts.tzinfo is not UTC:
        return ts.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    second = (ts.hour, ts.minute, ts.second, ts.day, ts.month, ts.year)
    last = _last_second  # one read and one write of the pair: safe across threads
    if last[0] != second:
        last = _last_second = (second, ts.isoformat(timespec="seconds")[:-6] + ".")
    # Six digits without a format spec to parse: this runs for every event written.
    return last[1] + str(ts.microsecond + 1_000_000)[1:] + "Z"


class EventBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    seq: int = Field(ge=0, lt=2**63, description="0-based, gapless per run")
    # Written by `ts_text` itself (no method in between: it runs for every event).
    ts: Annotated[datetime, PlainSerializer(ts_text, return_type=str)] = Field(
        description="UTC, microsecond precision"
    )
    turn: int | None = Field(
        default=None, ge=1, lt=2**31, description="1-based turn number; null outside a turn"
    )

    @field_validator("ts")
    @classmethod
    def _ts_utc(cls, ts: datetime) -> datetime:
        # Traces write UTC; a time written without an offset is read as UTC too.
        return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turns: int = 10
    token_budget: int = 50_000
    model_timeout_s: float = 60.0
    tool_timeout_s: float = 30.0
    run_timeout_s: float = 300.0
    context_window: int = 128_000
    keep_rounds: int = 6
    max_tools: int = 8
    max_result_chars: int = 20_000


class Edit(BaseModel):
    """One change a fork applied to its parent's recording."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["system", "user", "tool_description", "tool_schema", "mock_result"]
    target: str | None = Field(default=None, description="tool name or tool call id")
    value: Any = None


class Totals(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    turns: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    duration_ms: float = 0.0


class RunStart(EventBase):
    type: Literal["run_start"] = "run_start"
    schema_version: int = SCHEMA_VERSION
    task: str
    system_prompt: str | None = None
    model: str
    base_url: str | None = Field(default=None, description="without credentials")
    params: dict[str, Any] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="every tool schema offered, in OpenAI format"
    )
    tool_sources: dict[str, str] = Field(
        default_factory=dict, description="tool name -> builtin | user | mcp:<server>"
    )
    tools_dropped: list[str] = Field(
        default_factory=list, description="registered tools not offered (over max_tools)"
    )
    renamed_tools: dict[str, str] = Field(
        default_factory=dict,
        description="name offered to the model -> the tool's own name at its source, for "
        "tools renamed to resolve a clash",
    )
    origin: RunOrigin = "agent"
    client: str | None = Field(
        default=None,
        description="who produced a captured or imported run (user agent, instrumentation)",
    )
    parent_run_id: str | None = None
    fork_turn: int | None = None
    edits: list[Edit] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)


# The `run_start.meta` key naming the conversation or agent session a run is part of (a
# string): `workbench run --session`, the proxy (`X-Workbench-Session`, a client's own
# session id, the conversation a follow-up run continues), a session import.
SESSION_META = "session_id"


class ModelRequest(EventBase):
    type: Literal["model_request"] = "model_request"
    attempt: int = 1
    api: ModelApi = Field(default="chat", description="the wire format the call used")
    messages: list[dict[str, Any]] = Field(
        description="the messages sent, in chat-completions shape whatever the wire format"
    )
    tools: list[dict[str, Any]] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict)
    stream: bool = True
    estimated_tokens: int = 0
    body: dict[str, Any] | None = Field(
        default=None,
        description="the request body exactly as sent, when the wire format is not chat "
        "(for chat, messages, tools and params are the body)",
    )


class ModelChunk(EventBase):
    type: Literal["model_chunk"] = "model_chunk"
    attempt: int = 1
    index: int = Field(ge=0, description="chunk number within the attempt")
    elapsed_ms: float = Field(description="since the request was sent")
    data: dict[str, Any] = Field(description="the raw chunk as received")


class ModelResponse(EventBase):
    type: Literal["model_response"] = "model_response"
    attempt: int = 1
    message: dict[str, Any] = Field(description="the assembled assistant message")
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    ttft_ms: float | None = None
    latency_ms: float = 0.0
    chunks: int = 0


class ToolStart(EventBase):
    type: Literal["tool_start"] = "tool_start"
    call_id: str
    name: str
    arguments_raw: str
    arguments: dict[str, Any] | None = None
    parse_error: str | None = None
    source: str = Field(default="builtin", description="builtin | user | mcp:<server>")
    source_name: str | None = Field(
        default=None, description="the tool's own name at its source, when the model saw another"
    )
    reasoning: str | None = None


class ToolEnd(EventBase):
    type: Literal["tool_end"] = "tool_end"
    call_id: str
    name: str
    ok: bool
    result: str
    error: str | None = None
    duration_ms: float = 0.0
    truncated: bool = False
    mocked: bool = False
    replayed: bool = False
    observed: bool = Field(
        default=False,
        description="the client ran this call (a captured run); only its result was seen",
    )


class McpMessage(EventBase):
    type: Literal["mcp_message"] = "mcp_message"
    server: str
    direction: McpDirection
    frame: dict[str, Any] = Field(description="the raw JSON-RPC frame")


class ToolsChanged(EventBase):
    """A tool source changed its tools mid-run; `tools` is offered from the next turn."""

    type: Literal["tools_changed"] = "tools_changed"
    source: str = Field(description="e.g. mcp:<server>")
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="every tool schema offered from the next turn"
    )
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    dropped: list[str] = Field(
        default_factory=list, description="registered tools not offered (over max_tools)"
    )


class HistoryTrimmed(EventBase):
    type: Literal["history_trimmed"] = "history_trimmed"
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    rounds_kept: int
    rounds_dropped: int
    summary: str | None = None


class Error(EventBase):
    type: Literal["error"] = "error"
    where: ErrorWhere
    kind: str
    message: str
    retriable: bool = False
    attempt: int | None = None
    status_code: int | None = None


class RunEnd(EventBase):
    type: Literal["run_end"] = "run_end"
    status: RunStatus
    reason: str = ""
    timeout_layer: TimeoutLayer | None = None
    final_answer: str | None = None
    totals: Totals = Field(default_factory=Totals)


# The one list of event types: the union, the classes and the `type` tags all come from it.
AnyEvent: TypeAlias = (
    RunStart
    | ModelRequest
    | ModelChunk
    | ModelResponse
    | ToolStart
    | ToolEnd
    | McpMessage
    | ToolsChanged
    | HistoryTrimmed
    | Error
    | RunEnd
)
Event: TypeAlias = Annotated[AnyEvent, Field(discriminator="type")]
EVENT_TYPES: tuple[type[EventBase], ...] = get_args(AnyEvent)
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def event_to_json(event: EventBase) -> str:
    return event.model_dump_json()


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one trace line (what `workbench schema` prints)."""
    schema = EVENT_ADAPTER.json_schema(mode="serialization")
    schema["title"] = "agent workbench trace event"
    schema["description"] = f"One JSON Lines record; schema_version {SCHEMA_VERSION}."
    return schema
