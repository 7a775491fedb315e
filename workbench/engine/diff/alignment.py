"""Run-vs-run diffs: the tool schemas two runs offered, and their decision chains.

    tools = diff_tools(recording_a, recording_b)     # traces.schema_diff.ToolSchemaDiff
    chain = diff_chains(recording_a, recording_b)    # ChainDiff, aligned by turn

A decision chain is, per turn, the tool calls the model chose (name and arguments) and what
came back (a digest of the result and ok/error), or the answer it gave instead. Two chains
are aligned turn by turn; the first turn that differs is marked.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

from agent_core.wire.chat import tool_call
from traces.text import one_line
from traces.tree import TurnNode
from workbench.engine.recording.fork.tool_policy import call_label, recorded_decisions
from workbench.engine.recording.runs.load import Recording
from workbench.engine.recording.runs.parent import ParentRun

TurnOutcome = Literal["tools", "answer", "model_error", "incomplete"]


def digest(text: str | None) -> str | None:
    if text is None:
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


# What became of a call the model asked for; not_run: asked for, never started (a refused
# repeat, a limit). Front ends key their marks by CALL_STATUSES, so none can be missed.
CallStatus = Literal["ok", "error", "missing", "not_run"]
CALL_STATUSES: tuple[CallStatus, ...] = get_args(CallStatus)


@dataclass(frozen=True)
class ChainCall:
    name: str
    arguments: Any  # parsed arguments, or the raw string when they did not parse
    result_digest: str | None
    status: CallStatus
    call_id: str = ""  # for reference only; ids are not compared
    mocked: bool = False
    result: str | None = None  # the result text itself (the digest is what is compared)
    # In a re-run: the tool's side-effect policy and what became of the call under it.
    policy: str | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "mocked": self.mocked,
            "policy": self.policy,
            "name": self.name,
            "arguments": self.arguments,
            "result_digest": self.result_digest,
            "result": self.result,
            "status": self.status,
        }

    def label(self) -> str:
        args = json.dumps(self.arguments, ensure_ascii=False, sort_keys=True)
        if len(args) > 60:
            args = args[:59] + "…"
        mocked = " (mocked)" if self.mocked and self.policy is None else ""
        policy = f" [{self.policy}]" if self.policy else ""
        if self.status == "not_run":
            return f"{self.name}({args}) → not run"
        return f"{self.name}({args}) → {self.status}: {_shown(self.result)}{mocked}{policy}"


@dataclass(frozen=True)
class ChainTurn:
    turn: int
    outcome: TurnOutcome
    calls: tuple[ChainCall, ...] = ()
    answer_digest: str | None = None
    answer: str | None = None  # the answer text itself
    text: str | None = None  # what the model said beside its tool calls

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "outcome": self.outcome,
            "calls": [call.to_json() for call in self.calls],
            "answer_digest": self.answer_digest,
            "answer": self.answer,
            "text": self.text,
        }

    def label(self) -> str:
        if self.outcome == "tools":
            return "; ".join(call.label() for call in self.calls)
        if self.outcome == "answer":
            return f"answer: {_shown(self.answer)}"
        return self.outcome.replace("_", " ")


def _shown(text: str | None, width: int = 80) -> str:
    return "-" if text is None else one_line(text, width)


def chain_of(recording: Recording) -> list[ChainTurn]:
    """The decision chain per turn, walked from the recording's turns (`traces.tree`
    built them once when it was read; building them again doubled a long diff's work)."""
    policies = recorded_decisions(recording.run_start.meta)
    return [_chain_turn(node, policies) for node in recording.turns.values() if node.model_calls]


def _chain_turn(node: TurnNode, policies: dict[str, str] | None = None) -> ChainTurn:
    policies = policies or {}
    calls = []
    for call in node.tool_calls:
        start, end = call.start, call.end
        arguments: Any = start.arguments if start.arguments is not None else start.arguments_raw
        status: Literal["ok", "error", "missing"] = (
            "missing" if end is None else ("ok" if end.ok else "error")
        )
        result = end.result if end else None
        mocked = end.mocked if end else False
        label = call_label(policies.get(start.name), end)
        calls.append(
            ChainCall(
                start.name, arguments, digest(result), status, start.call_id, mocked, result, label
            )
        )
    response = node.response
    content = response.message.get("content") if response is not None else None
    text = content if isinstance(content, str) and content else None
    calls += _calls_not_run(node)
    if calls:
        return ChainTurn(node.turn, "tools", tuple(calls), text=text)
    if response is not None:
        return ChainTurn(node.turn, "answer", answer_digest=digest(text or ""), answer=text or "")
    if node.status == "error":
        return ChainTurn(node.turn, "model_error")
    return ChainTurn(node.turn, "incomplete")


def _calls_not_run(node: TurnNode) -> list[ChainCall]:
    """Calls the model asked for that the loop never started (a refused repeat, a limit):
    the model's decision all the same, so the turn is a tools turn, not an answer."""
    found: list[ChainCall] = []
    for call in map(tool_call, node.calls_not_run):
        arguments = call.arguments if call.arguments is not None else call.arguments_raw
        found.append(ChainCall(call.name or "?", arguments, None, "not_run", call.id))
    return found


@dataclass(frozen=True)
class ChainRow:
    turn: int
    a: ChainTurn | None
    b: ChainTurn | None
    differences: tuple[str, ...] = ()  # what differs: "tool", "arguments", "result", ...
    first_divergence: bool = False

    @property
    def same(self) -> bool:
        return not self.differences

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "a": self.a.to_json() if self.a else None,
            "b": self.b.to_json() if self.b else None,
            "same": self.same,
            "differences": list(self.differences),
            "first_divergence": self.first_divergence,
        }


@dataclass(frozen=True)
class ChainDiff:
    run_a: str
    run_b: str
    rows: list[ChainRow]
    status_a: str
    status_b: str
    first_divergence: int | None = None  # turn number
    notes: list[str] = field(default_factory=list)

    @property
    def is_equal(self) -> bool:
        return self.first_divergence is None and self.status_a == self.status_b

    def to_json(self) -> dict[str, Any]:
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "equal": self.is_equal,
            "first_divergence_turn": self.first_divergence,
            "status_a": self.status_a,
            "status_b": self.status_b,
            "turns": [row.to_json() for row in self.rows],
        }


def _run_status(recording: Recording) -> str:
    return recording.run_end.status if recording.run_end is not None else "incomplete"


def _inherit(fork: Recording, parent: Recording, turns: dict[int, ChainTurn]) -> None:
    """A fork's turns before its fork point are its parent's, not missing."""
    start = fork.run_start
    if start.parent_run_id != parent.run_id or start.fork_turn is None:
        return
    mocks = {e.target: str(e.value) for e in start.edits if e.kind == "mock_result"}
    for turn in chain_of(parent):
        if turn.turn >= start.fork_turn:
            continue
        # The fork's history carries its mocked results in place of the parent's.
        calls = tuple(
            replace(
                call,
                result_digest=digest(mocks[call.call_id]),
                result=mocks[call.call_id],
                status="ok",
                mocked=True,
            )
            if call.call_id in mocks
            else call
            for call in turn.calls
        )
        turns.setdefault(turn.turn, replace(turn, calls=calls))


def diff_chains(a: Recording, b: Recording) -> ChainDiff:
    turns_a = {turn.turn: turn for turn in chain_of(a)}
    turns_b = {turn.turn: turn for turn in chain_of(b)}
    _inherit(b, a, turns_b)
    _inherit(a, b, turns_a)
    rows: list[ChainRow] = []
    first: int | None = None
    for number in sorted(set(turns_a) | set(turns_b)):
        left, right = turns_a.get(number), turns_b.get(number)
        differences = tuple(_turn_differences(left, right))
        marked = bool(differences) and first is None
        if marked:
            first = number
        rows.append(ChainRow(number, left, right, differences, marked))
    return ChainDiff(a.run_id, b.run_id, rows, _run_status(a), _run_status(b), first)


def _turn_differences(a: ChainTurn | None, b: ChainTurn | None) -> list[str]:
    if a is None or b is None:
        return ["missing in A" if a is None else "missing in B"]
    if a.outcome != b.outcome:
        return ["outcome"]
    found: list[str] = []
    if len(a.calls) != len(b.calls):
        found.append("call count")
    for left, right in zip(a.calls, b.calls, strict=False):
        if left.name != right.name:
            found.append("tool")
        elif left.arguments != right.arguments:
            found.append("arguments")
        elif left.status != right.status:
            found.append("status")
        elif left.result_digest != right.result_digest:
            found.append("result")
    if (a.text or "") != (b.text or ""):
        found.append("text")  # what the model said beside its calls
    if a.answer_digest != b.answer_digest:
        found.append("answer")
    return list(dict.fromkeys(found))


def render_chain(diff: ChainDiff) -> list[str]:
    """The aligned chains as text lines, the first divergence marked with `>>`."""
    lines = [f"decision chains: A {diff.run_a[:12]} vs B {diff.run_b[:12]}"]
    for row in diff.rows:
        mark = ">>" if row.first_divergence else ("  " if row.same else " ~")
        verdict = "same" if row.same else "differs: " + ", ".join(row.differences)
        lines.append(f"{mark} turn {row.turn}: {verdict}")
        if row.same:
            lines.append(f"      {row.a.label() if row.a else '-'}")
        else:
            lines.append(f"      A {row.a.label() if row.a else '-'}")
            lines.append(f"      B {row.b.label() if row.b else '-'}")
    lines.append(f"   end: A {diff.status_a} | B {diff.status_b}")
    if diff.is_equal:
        lines.append("the decision chains are the same")
    elif diff.first_divergence is not None:
        lines.append(f"first divergence at turn {diff.first_divergence}")
    else:
        lines.append("the chains match turn by turn but the runs ended differently")
    return lines


def diff_tools(a: Recording | ParentRun, b: Recording | ParentRun) -> Any:
    """The tool-schema diff between the two runs' run_start tools (a ToolSchemaDiff)."""
    from traces.schema_diff import diff_tool_schemas

    return diff_tool_schemas(a.run_start.tools, b.run_start.tools)


def render_tools(diff: Any, run_a: str, run_b: str) -> list[str]:
    """The tool-schema diff as text lines, by the schema diff's own text renderer."""
    from traces import schema_diff

    head = f"tool schemas: A {run_a[:12]} vs B {run_b[:12]}"
    if diff.is_empty:
        return [head, "the tool schemas are the same"]
    text = schema_diff.render_text(diff)
    return [head, *text.splitlines()]
