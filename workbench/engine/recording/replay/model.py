"""The model and the tools of a replay: both answer from a recording, never from the world.

`ReplayModel` serves turn k's recorded attempts (chunks re-emitted in order through the
shared assembler, failed attempts as they failed) and checks the incoming request against
the recorded `model_request`. `ReplayToolset` offers the recorded tool schemas and serves the
recorded `tool_end` of each call, MCP tools included, so no server starts and no tool runs.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent_core.model.base import (
    AttemptFailed,
    AttemptStarted,
    Completed,
    ModelCall,
    ModelError,
    ModelTimeout,
    RawChunk,
    StreamItem,
)
from agent_core.tools.base import CallKey, ToolResult, ToolSpec, call_key
from agent_core.wire.codecs import codec_for
from traces.events import ModelRequest, RunStart, ToolEnd, ToolsChanged
from traces.recorder import Recorder
from traces.tree import TurnNode
from workbench.engine.recording.replay.field_diff import FieldDiff, diff_values
from workbench.engine.recording.replay.same_request import request_view, view_key

if TYPE_CHECKING:
    from workbench.engine.recording.replay.streamed import ReplaySource


def diff_request(recorded: ModelRequest, call: ModelCall) -> list[FieldDiff]:
    """How the request the loop built differs from the one the recording sent, read as the
    same request at the `exact` level."""
    want = request_view("exact", recorded.messages, recorded.tools, recorded.params)
    got = request_view("exact", call.messages, call.tools, call.params)
    return [] if view_key(want) == view_key(got) else diff_values(want, got)


@dataclass(frozen=True)
class RequestMismatch:
    turn: int
    diffs: list[FieldDiff]


class ReplayModel:
    """A `ChatModel` that answers the k-th call with the k-th recorded model turn."""

    def __init__(self, recording: ReplaySource) -> None:
        self.name = recording.run_start.model
        self.base_url = recording.run_start.base_url
        # Read a turn at a time, as the calls come: a long run is never held whole.
        self._turns: Iterator[TurnNode] = recording.model_turn_nodes()
        self._count = len(recording.model_turns)
        first = recording.first_request
        # The wire format the recorded client spoke; its calls are served in it.
        self.api = first.api if first is not None else "chat"
        self._request: ModelRequest | None = None
        self._cursor = 0
        self.current_turn: int | None = None
        self.mismatch: RequestMismatch | None = None

    @property
    def calls_served(self) -> int:
        return self._cursor

    def wire_body(self, call: ModelCall) -> dict[str, Any] | None:
        """The body of the call being served, as recorded (its messages are checked)."""
        return self._request.body if self._request is not None else None

    async def stream(self, call: ModelCall) -> AsyncIterator[StreamItem]:
        if self._cursor >= self._count:
            raise ModelError(
                "replay_exhausted", "the recording has no further model call to replay"
            )
        record = next(self._turns)
        self._cursor += 1
        self.current_turn = record.turn
        request = record.request
        assert request is not None  # model_turns only lists turns with a request
        self._request = request
        diffs = diff_request(request, call)
        attempts = _attempt_numbers(record)
        for position, attempt in enumerate(attempts):
            yield AttemptStarted(attempt)
            if diffs:
                self.mismatch = RequestMismatch(record.turn, diffs)
                raise ModelError(
                    "replay_divergence",
                    f"turn {record.turn}: the request differs from the recording at "
                    f"{diffs[0].path}",
                )
            codec = codec_for(request.api)
            assembler = codec.assembler()
            whole = None
            for chunk in record.chunks.get(attempt, []):
                if codec.is_whole(chunk.data):
                    whole = codec.whole_response(chunk.data)
                    text = whole.content or ""
                else:
                    text = assembler.add(chunk.data)
                yield RawChunk(attempt, chunk.index, chunk.elapsed_ms, chunk.data, text)
            response = record.response
            if response is not None and response.attempt == attempt:
                yield Completed(
                    attempt,
                    whole or assembler.response(),
                    response.ttft_ms,
                    response.latency_ms,
                    response.chunks,
                )
                return
            error = next((e for e in record.model_errors if e.attempt == attempt), None)
            if error is None:
                if _loop_timeout(record):
                    # The loop's own model deadline fired here; let it fire again at once.
                    raise TimeoutError(f"turn {record.turn}: the model call timed out")
                # The recording stops inside this attempt (a killed run).
                raise ModelError("replay_exhausted", f"turn {record.turn} was not recorded whole")
            last = position == len(attempts) - 1
            yield AttemptFailed(
                attempt,
                error.kind,
                error.message,
                error.retriable,
                error.status_code,
                will_retry=not last,
            )
            if last:
                if error.kind == "timeout":
                    raise ModelTimeout(error.message)
                raise ModelError(error.kind, error.message, status_code=error.status_code)


def _loop_timeout(record: TurnNode) -> bool:
    """The loop (not the client) gave up on the model: its error carries no attempt."""
    return any(e.kind == "timeout" and e.attempt is None for e in record.model_errors)


def _attempt_numbers(record: TurnNode) -> list[int]:
    numbers = {request.attempt for request in record.requests}
    numbers.update(record.chunks)
    numbers.update(e.attempt for e in record.model_errors if e.attempt is not None)
    if record.response is not None:
        numbers.add(record.response.attempt)
    return sorted(numbers)


_TRUNCATION_NOTE = re.compile(r"\n\[truncated: (\d+) more characters not shown; [^\]]*\]$")


def untruncated_text(end: ToolEnd) -> str:
    """A text the loop's size cap turns back into exactly the recorded result.

    The loop caps every tool result; serving an already capped result as-is would get the
    note appended twice. The hidden part is gone, so it is stood in for by filler of the
    recorded length, which the cap cuts off again.
    """
    if not end.truncated:
        return end.result
    match = _TRUNCATION_NOTE.search(end.result)
    if match is None:
        return end.result
    return end.result[: match.start()] + " " * int(match.group(1))


def served_result(end: ToolEnd, *, replayed: bool = True) -> ToolResult:
    """The recorded outcome of a call as a toolset returns it."""
    return ToolResult(
        ok=end.ok,
        text=untruncated_text(end),
        error=end.error,
        mocked=end.mocked,
        replayed=replayed,
        meta={"timeout": True} if end.error == "timeout" else {},
    )


class _Started(Protocol):
    """A run whose run_start is read (a recording, a fork's parent, a replay's source)."""

    @property
    def run_start(self) -> RunStart: ...


def recorded_specs(recording: _Started, read_only: set[str] | None = None) -> list[ToolSpec]:
    """The tools the run offered, exactly as recorded in run_start."""
    start = recording.run_start
    flags = read_only if read_only is not None else recorded_read_only(recording)
    return specs_of(start.tools, start.tool_sources, start.renamed_tools, flags)


def specs_of(
    schemas: list[dict[str, Any]],
    sources: dict[str, str],
    renamed: dict[str, str],
    read_only: set[str],
) -> list[ToolSpec]:
    specs = []
    for schema in schemas:
        function = schema.get("function")
        # A tool with no `function` (a Responses custom tool, an Anthropic server tool) is
        # kept as the client sent it, under its own name.
        wire = None if isinstance(function, dict) else schema
        fields = function if isinstance(function, dict) else schema
        name = str(fields.get("name") or "")
        parameters = fields.get("parameters") if wire is None else fields.get("input_schema")
        specs.append(
            ToolSpec(
                name=name,
                description=str(fields.get("description") or ""),
                parameters=parameters or {"type": "object", "properties": {}},
                read_only=name in read_only,
                source=sources.get(name, "builtin"),
                source_name=renamed.get(name),
                wire=wire,
            )
        )
    return specs


def left_out(names: list[str]) -> list[ToolSpec]:
    """Stand-ins for tools a run registered but did not offer (over max_tools): only their
    names were recorded. They can never outscore the tools that were offered, so choosing
    again leaves out exactly these and `tools_dropped` comes out the same."""
    empty = {"type": "object", "properties": {}}
    return [ToolSpec(name=name, description="", parameters=empty, source="") for name in names]


def recorded_read_only(recording: _Started) -> set[str]:
    """Names of read-only tools: as the run recorded them, else the built-in flags."""
    meta = recording.run_start.meta.get("read_only_tools")
    if isinstance(meta, list):
        return {str(name) for name in meta}
    return builtin_read_only()


def builtin_read_only() -> set[str]:
    try:
        from agent_core.tools.builtin import builtin_tools
    except ImportError:
        return set()
    try:
        return {spec.name for spec in builtin_tools(Path(".")).specs() if spec.read_only}
    except Exception:
        return set()


class ReplayToolset:
    """Serves each call the result the recording has for it; nothing is executed.

    Its tools are the ones the run registered: those offered, stand-ins for those left out,
    and from the turn of each recorded `tools_changed` the set recorded there (the replay
    sets `recorder`, whose turn says which changes have happened)."""

    def __init__(self, recording: ReplaySource, model: ReplayModel | None = None) -> None:
        self._model = model
        self._recording = recording
        self._read_only = recorded_read_only(recording)
        self._specs = recorded_specs(recording, self._read_only)
        self._changes = recording.tool_changes
        self.recorder: Recorder | None = None
        self._served: set[tuple[int, str]] = set()
        # Indexed once: a long run asks for hundreds of results. Each result is read when
        # served (`ReplaySource.tool_end`): the index holds where, not what.
        self._by_id: dict[tuple[str, str], list[_Found]] = {}
        self._by_arguments: dict[CallKey, list[_Found]] = {}
        for number, call_id, name, key, seq in recording.tool_calls:
            self._by_id.setdefault((call_id, name), []).append((number, call_id, seq))
            self._by_arguments.setdefault(key, []).append((number, call_id, seq))

    def _applied(self) -> list[ToolsChanged]:
        turn = self.recorder.turn if self.recorder is not None else None
        if turn is None:
            return []
        return [change for change in self._changes if (change.turn or 0) <= turn]

    @property
    def tools_versions(self) -> dict[str, int]:
        versions: dict[str, int] = {}
        for change in self._applied():
            versions[change.source] = versions.get(change.source, 0) + 1
        return versions

    def specs(self) -> list[ToolSpec]:
        start = self._recording.run_start
        applied = self._applied()
        if not applied:
            return [*self._specs, *left_out(start.tools_dropped)]
        sources = dict(start.tool_sources)
        for change in applied:
            sources.update({name: change.source for name in change.added})
        last = applied[-1]
        specs = specs_of(last.tools, sources, start.renamed_tools, self._read_only)
        return [*specs, *left_out(last.dropped)]

    async def call(self, name: str, arguments: dict[str, Any], call_id: str) -> ToolResult:
        turn = self._model.current_turn if self._model is not None else None
        found = self._find(turn, name, arguments, call_id)
        if found is None:
            return ToolResult(
                ok=False,
                text=f"replay: the recording has no result for {name} (call {call_id})",
                error="not_recorded",
                replayed=True,
            )
        found_turn, recorded_id, seq = found
        self._served.add((found_turn, recorded_id))
        return served_result(self._recording.tool_end(found_turn, seq))

    def _find(
        self, turn: int | None, name: str, arguments: dict[str, Any], call_id: str
    ) -> _Found | None:
        # The same call id in the current turn, then in any turn; then the same name and
        # arguments not served yet (ids a provider did not send are regenerated).
        same_id = self._by_id.get((call_id, name), [])
        for found in same_id:
            if turn is None or found[0] == turn:
                return found
        if same_id:
            return same_id[0]
        for found in self._by_arguments.get(call_key(name, arguments), []):
            if found[:2] not in self._served:
                return found
        return None


# A recorded call with a result, as the toolset finds it: its turn, id and tool_end's seq.
_Found = tuple[int, str, int]
