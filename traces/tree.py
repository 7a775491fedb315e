"""The decision chain: a run's flat events rebuilt into run → turns → model calls and tool
calls → end, which `workbench show`, the TUI and the engine's chain diff all walk.

Model calls are keyed by attempt (a retry is a second call in the same turn); tool calls
are paired start/end by `call_id`, and MCP frames sent while a call from that server is
open belong to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, assert_never, get_args

from traces.events import (
    Error,
    Event,
    HistoryTrimmed,
    McpMessage,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    RunEnd,
    RunStart,
    ToolEnd,
    ToolsChanged,
    ToolStart,
)

CallStatus: TypeAlias = Literal["ok", "error", "running"]
TurnStatus: TypeAlias = Literal["ok", "tool_error", "error", "running"]
# What a tool call the model asked for came to, as a tree shows it: how it ended, or where
# its result came from when it was not run here (mocked by an edit, replayed from a
# recording, observed in a client's traffic), or `not_run` (asked for, never started: a
# refused repeat, a limit). Front ends key their marks by TOOL_CALL_OUTCOMES, so a new
# outcome cannot go unmarked.
ToolCallOutcome: TypeAlias = Literal[
    "ok", "error", "running", "not_run", "mocked", "replayed", "observed"
]
TOOL_CALL_OUTCOMES: tuple[ToolCallOutcome, ...] = get_args(ToolCallOutcome)


@dataclass
class ModelCallNode:
    attempt: int
    request: ModelRequest | None = None
    chunks: list[ModelChunk] = field(default_factory=list)
    response: ModelResponse | None = None
    error: Error | None = None

    @property
    def status(self) -> CallStatus:
        if self.response is not None:
            return "ok"
        return "error" if self.error is not None else "running"


@dataclass
class ToolCallNode:
    start: ToolStart
    end: ToolEnd | None = None
    mcp: list[McpMessage] = field(default_factory=list)
    errors: list[Error] = field(default_factory=list)

    @property
    def call_id(self) -> str:
        return self.start.call_id

    @property
    def name(self) -> str:
        return self.start.name

    @property
    def arguments(self) -> dict[str, Any] | None:
        return self.start.arguments

    @property
    def status(self) -> CallStatus:
        if self.end is None:
            return "running"
        return "ok" if self.end.ok else "error"

    @property
    def duration_ms(self) -> float | None:
        return self.end.duration_ms if self.end is not None else None

    @property
    def outcome(self) -> ToolCallOutcome:
        """Where the result came from when it was not run here, else how the call ended
        (a mocked error result is `mocked`; `status` still says it failed)."""
        end = self.end
        if end is None:
            return "running"
        if end.mocked:
            return "mocked"
        if end.replayed:
            return "replayed"
        if end.observed:
            return "observed"
        return "ok" if end.ok else "error"


@dataclass
class TurnNode:
    turn: int
    model_calls: list[ModelCallNode] = field(default_factory=list)
    tool_calls: list[ToolCallNode] = field(default_factory=list)
    trims: list[HistoryTrimmed] = field(default_factory=list)
    errors: list[Error] = field(default_factory=list)  # not tied to one call
    mcp: list[McpMessage] = field(default_factory=list)  # frames outside any tool call
    events: list[Event] = field(default_factory=list)

    @property
    def request(self) -> ModelRequest | None:
        """What the model was last sent in this turn (the final attempt's request)."""
        for call in reversed(self.model_calls):
            if call.request is not None:
                return call.request
        return None

    @property
    def response(self) -> ModelResponse | None:
        for call in reversed(self.model_calls):
            if call.response is not None:
                return call.response
        return None

    @property
    def calls_not_run(self) -> list[dict[str, Any]]:
        """Tool calls the model asked for (in its answer) that never started: the loop
        refused a repeated call, or a limit ended the run first. OpenAI call shapes."""
        response = self.response
        if response is None:
            return []
        started = {call.call_id for call in self.tool_calls}
        asked = response.message.get("tool_calls")
        if not isinstance(asked, list):  # any JSON is a valid message; only a list has calls
            return []
        return [c for c in asked if isinstance(c, dict) and str(c.get("id")) not in started]

    @property
    def requests(self) -> list[ModelRequest]:
        """Every request of the turn, one per attempt, in order."""
        return [call.request for call in self.model_calls if call.request is not None]

    @property
    def chunks(self) -> dict[int, list[ModelChunk]]:
        """The raw chunks of each attempt."""
        found: dict[int, list[ModelChunk]] = {}
        for call in self.model_calls:
            if call.chunks:
                found.setdefault(call.attempt, []).extend(call.chunks)
        return found

    @property
    def model_errors(self) -> list[Error]:
        """The errors of the model calls (the loop's model timeout included), in order."""
        return [e for e in self.events if isinstance(e, Error) and e.where == "model"]

    def tool_end_for(self, call_id: str) -> ToolEnd | None:
        for call in self.tool_calls:
            if call.call_id == call_id and call.end is not None:
                return call.end
        return None

    @property
    def complete(self) -> bool:
        """The model answered and every tool call it asked for ended."""
        return self.response is not None and all(c.end is not None for c in self.tool_calls)

    @property
    def status(self) -> TurnStatus:
        if self.model_calls and self.model_calls[-1].status == "error":
            return "error"
        if any(call.status == "running" for call in self.tool_calls):
            return "running"
        if not self.model_calls or self.model_calls[-1].status == "running":
            return "running"
        if any(call.status == "error" for call in self.tool_calls):
            return "tool_error"
        return "ok"


@dataclass
class RunChain:
    run_id: str
    start: RunStart | None = None
    turns: list[TurnNode] = field(default_factory=list)
    end: RunEnd | None = None
    errors: list[Error] = field(default_factory=list)  # outside any turn
    trims: list[HistoryTrimmed] = field(default_factory=list)  # outside any turn
    mcp: list[McpMessage] = field(default_factory=list)  # e.g. the initialize handshake

    @property
    def status(self) -> str:
        """The run's status, `incomplete` when the trace has no run_end."""
        return self.end.status if self.end is not None else "incomplete"

    def turn(self, number: int) -> TurnNode | None:
        for node in self.turns:
            if node.turn == number:
                return node
        return None


class _Builder:
    def __init__(self) -> None:
        self.chain = RunChain(run_id="")
        self.turns: dict[int, TurnNode] = {}
        # Open tool calls by id, oldest first: a provider may reuse an id within a turn.
        self.open_tools: dict[str, list[ToolCallNode]] = {}

    def _turn(self, number: int) -> TurnNode:
        node = self.turns.get(number)
        if node is None:
            node = self.turns[number] = TurnNode(turn=number)
            self.chain.turns.append(node)
        return node

    def _model_call(self, turn: TurnNode, attempt: int) -> ModelCallNode:
        if turn.model_calls and turn.model_calls[-1].attempt == attempt:
            last = turn.model_calls[-1]
            if last.response is None:
                return last
        call = ModelCallNode(attempt=attempt)
        turn.model_calls.append(call)
        return call

    def add(self, event: Event) -> None:
        self.chain.run_id = self.chain.run_id or event.run_id
        turn = self._turn(event.turn) if event.turn is not None else None
        if turn is not None:
            turn.events.append(event)
        match event:
            case RunStart():
                self.chain.start = event
            case RunEnd():
                self.chain.end = event
            case ModelRequest():
                if turn is not None:
                    call = ModelCallNode(attempt=event.attempt, request=event)
                    turn.model_calls.append(call)
            case ModelChunk():
                if turn is not None:
                    self._model_call(turn, event.attempt).chunks.append(event)
            case ModelResponse():
                if turn is not None:
                    self._model_call(turn, event.attempt).response = event
            case ToolStart():
                node = ToolCallNode(start=event)
                self.open_tools.setdefault(event.call_id, []).append(node)
                if turn is not None:
                    turn.tool_calls.append(node)
            case ToolEnd():
                waiting = self.open_tools.get(event.call_id)
                if waiting:
                    waiting.pop(0).end = event
                    if not waiting:
                        del self.open_tools[event.call_id]
            case McpMessage():
                self._add_mcp(event, turn)
            case HistoryTrimmed():
                (turn.trims if turn is not None else self.chain.trims).append(event)
            case ToolsChanged():
                pass  # kept in its turn's events; the next turn's request shows the new tools
            case Error():
                self._add_error(event, turn)
            case _:
                assert_never(event)

    def _add_mcp(self, event: McpMessage, turn: TurnNode | None) -> None:
        source = f"mcp:{event.server}"
        for node in reversed(self._open_calls()):
            if node.start.source == source:
                node.mcp.append(event)
                return
        (turn.mcp if turn is not None else self.chain.mcp).append(event)

    def _open_calls(self) -> list[ToolCallNode]:
        """The tool calls still running, in the order they started."""
        return sorted(
            (node for nodes in self.open_tools.values() for node in nodes),
            key=lambda node: node.start.seq,
        )

    def _add_error(self, event: Error, turn: TurnNode | None) -> None:
        if turn is None:
            self.chain.errors.append(event)
        elif event.where == "model" and turn.model_calls:
            call = turn.model_calls[-1]
            if call.response is None and (event.attempt in (None, call.attempt)):
                call.error = event
                return
            turn.errors.append(event)
        elif event.where in ("tool", "mcp") and self.open_tools:
            self._open_calls()[-1].errors.append(event)
        else:
            turn.errors.append(event)


def build_chain(events: Iterable[Event]) -> RunChain:
    """Rebuild the decision chain from a run's events (in seq order)."""
    builder = _Builder()
    for event in sorted(events, key=lambda e: e.seq):
        builder.add(event)
    builder.chain.turns.sort(key=lambda node: node.turn)
    return builder.chain


def run_duration_ms(events: Iterable[Event]) -> float:
    """A run's duration: from its first event to its last, on the trace's own clock (the
    store's `runs.duration_ms` counts it the same way in SQL). Not `run_end.totals`, which
    the loop also times but from before the run was set up (its tools, MCP servers)."""
    stamps = [event.ts for event in events]
    if not stamps:
        return 0.0
    return (max(stamps) - min(stamps)).total_seconds() * 1000.0


# What a run's `final_answer` is called. Only a completed run's last text is its answer; a
# run that was stopped (a limit, an error) keeps what the model said last, which is not one.
ANSWER = "answer"
NOT_AN_ANSWER = "last text (not an answer)"


def answer_label(status: str) -> str:
    """The one name every view (CLI, TUI, export) gives `run_end.final_answer`."""
    return ANSWER if status == "completed" else NOT_AN_ANSWER


def answer_fields(status: str | None, text: str | None) -> dict[str, str | None]:
    """`run_end.final_answer` as a summary in JSON gives it (an export, mcp-serve's answers):
    under `answer` when the run completed, else under `last_text` (`answer_label`). The
    events keep the field as it is."""
    done = status == "completed"
    return {"answer": text if done else None, "last_text": None if done else text}
