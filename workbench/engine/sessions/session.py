"""What Claude Code's and Codex's session readers share: reading a JSON Lines session file
(each bad line one problem, the rest still read), and `SessionRun`, the run being built as
the file is read.

A session becomes one run in the trace contract: every answer of the model is a turn (a
`model_request` holding the conversation before it, in the chat-completions shape, and a
`model_response`); each tool call of an answer is a `tool_start`, and its result, when the
session holds one, a `tool_end` with `observed: true` (the agent ran it; the file only says
what came back). An answer without tool calls that nothing follows ends the run
`completed`; a session that stops anywhere else has no `run_end` (`incomplete`). Events take
the session's own times. `run_start.origin` is "imported"; `meta.session` names the file and
counts its records by type, and keeps every record of a type the reader does not know.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from agent_core.tokens import estimate_prompt
from agent_core.wire.chat import content_text, task_text, tool_calls
from traces.events import (
    SESSION_META,
    Event,
    ModelApi,
    ModelRequest,
    ModelResponse,
    RunEnd,
    RunStart,
    ToolEnd,
    ToolStart,
)
from traces.totals import RunningTotals
from traces.user_files import open_regular

TOOL_SOURCE = "client"
NO_RESULT = "the session holds no result for this call"
# The longest line read from a session file: far above any record the agents write (a
# message with a few screenshots); a longer line is a problem line, never the whole memory.
SESSION_LINE_CAP = 64 * 1024 * 1024


class SessionError(ValueError):
    """A session file that cannot be read at all; one line saying why."""


@dataclass
class SessionLines:
    """A session file's records (line number, object) and one problem line per bad line."""

    path: Path
    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def read_lines(path: Path) -> SessionLines:
    """The records of a session file, read as a stream. A FIFO or device named `.jsonl` is
    refused before anything is read (SessionError), a line over SESSION_LINE_CAP is a
    problem line."""
    read = SessionLines(path)
    try:
        with open_regular(path) as handle:
            for number, raw in enumerate(_bounded_lines(handle), 1):
                if raw is None:
                    cap = SESSION_LINE_CAP // (1024 * 1024)
                    read.problems.append(f"{path}:{number}: longer than {cap} MB; line skipped")
                elif raw.strip():
                    _read_record(read, number, raw)
    except OSError as exc:
        raise SessionError(f"cannot read {path}: {exc.strerror or exc}; skipped") from None
    return read


def _bounded_lines(handle: BinaryIO) -> Iterator[bytes | None]:
    """Each line of `handle`, or None for a line over the cap (the rest of it read past in
    pieces, so no line costs more than the cap)."""
    while line := handle.readline(SESSION_LINE_CAP + 1):
        if len(line) <= SESSION_LINE_CAP:
            yield line
            continue
        while not line.endswith(b"\n") and (line := handle.readline(SESSION_LINE_CAP)):
            pass
        yield None


def _read_record(read: SessionLines, number: int, raw: bytes) -> None:
    where = f"{read.path}:{number}"
    try:
        record = json.loads(raw)
    except RecursionError:
        read.problems.append(f"{where}: nested too deeply to read; line skipped")
        return
    except ValueError as exc:  # also bytes that are not UTF-8
        why = str(exc).split(":")[0] if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        read.problems.append(f"{where}: not a JSON line ({why}); line skipped")
        return
    if not isinstance(record, dict):
        read.problems.append(f"{where}: not a JSON object; line skipped")
        return
    read.records.append((number, record))


def timestamp(value: Any) -> datetime | None:
    """An ISO 8601 time as the session files write it (`2026-12-02T00:20:09.269Z`)."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def run_id_of(*parts: str) -> str:
    """A run id from a session id (a UUID's 32 hex digits, as the workbench's own ids), or
    from several parts (a sub-agent within its session), the same on every import."""
    if len(parts) == 1:
        try:
            return uuid.UUID(parts[0]).hex
        except ValueError:
            pass
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


@dataclass
class _Call:
    turn: int
    name: str
    asked: datetime


class SessionRun:
    """One run being built from a session, its messages and answers in the order read."""

    def __init__(self, run_id: str, api: ModelApi, source: str, path: Path) -> None:
        self.run_id = run_id
        self.api = api
        self.history: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []
        self.params: dict[str, Any] = {}
        self.system_prompt: str | None = None
        self.model: str | None = None
        self.client: str | None = None
        self.parent_run_id: str | None = None
        self.meta: dict[str, Any] = {"source": source, "file": str(path)}
        self.record_types: Counter[str] = Counter()
        self.unknown: list[dict[str, Any]] = []
        self.final_answer: str | None = None
        self._items: list[dict[str, Any]] = []
        self._open: dict[str, _Call] = {}
        self._turn = 0
        self._first: datetime | None = None
        self._last: datetime | None = None
        self._totals = RunningTotals()
        self._last_answer: dict[str, Any] | None = None

    @property
    def turns(self) -> int:
        return self._turn

    @property
    def last_seen(self) -> datetime | None:
        """The time of the latest record read so far."""
        return self._last

    def saw(self, kind: str, record: dict[str, Any], known: bool = True) -> None:
        """Count a record by its type; keep it whole when the type is not known."""
        self.record_types[kind if known else f"?{kind}"] += 1
        if not known:
            self.unknown.append(record)

    def at(self, when: datetime | None) -> datetime:
        when = when or self._last or datetime.now(UTC)
        self._first = self._first or when
        self._last = max(self._last, when) if self._last else when
        return when

    def context(self, when: datetime | None, message: dict[str, Any]) -> None:
        """A user, system or developer message the agent sent the model. A developer message
        (Codex sends its instructions so) is kept as a system message: the workbench's
        messages know four roles, and a fork or a regression case sends the history again."""
        if message.get("role") == "developer":
            message = {**message, "role": "system"}
        self.at(when)
        self.history.append(message)
        self._last_answer = None

    def answer(
        self,
        when: datetime | None,
        message: dict[str, Any],
        finish_reason: str | None,
        usage: dict[str, Any] | None,
        asked: datetime | None = None,
    ) -> None:
        """One answer of the model: a turn, with its tool calls started."""
        self._close_open(when, NO_RESULT)
        began = self._last
        at = self.at(when)
        self._turn += 1
        turn = self._turn
        messages = list(self.history)
        request = {"type": "model_request", "turn": turn, "ts": asked or began or at}
        request |= {"api": self.api, "messages": messages, "tools": self.tools}
        request |= {
            "params": self.params,
            "estimated_tokens": estimate_prompt(messages, self.tools),
        }
        self._items.append(request)
        latency = (at - (asked or began or at)).total_seconds() * 1000
        response = {"type": "model_response", "turn": turn, "ts": at, "message": message}
        response |= {"finish_reason": finish_reason, "usage": usage, "latency_ms": latency}
        self._items.append(response)
        counts = usage or {}
        self._totals.add_model_call(
            int(counts.get("prompt_tokens") or 0), int(counts.get("completion_tokens") or 0)
        )
        for call in tool_calls(message):
            start = {"type": "tool_start", "turn": turn, "ts": at, "call_id": call.id}
            start |= {"name": call.name, "arguments_raw": call.arguments_raw}
            start |= {"arguments": call.arguments, "parse_error": call.parse_error}
            self._items.append(start | {"source": TOOL_SOURCE})
            self._open[call.id] = _Call(turn, call.name, at)
        self.history.append(message)
        self._last_answer = message

    def result(self, when: datetime | None, call_id: str, text: str, ok: bool = True) -> None:
        """The result the agent sent back for one of the model's tool calls."""
        at = self.at(when)
        self.history.append({"role": "tool", "tool_call_id": call_id, "content": text})
        self._last_answer = None
        call = self._open.pop(call_id, None)
        if call is None:
            return  # a result for a call no answer of this session made
        self._end_call(call_id, call, at, text, None if ok else text or "the tool failed")

    def _end_call(
        self, call_id: str, call: _Call, at: datetime, text: str, error: str | None
    ) -> None:
        end = {"type": "tool_end", "turn": call.turn, "ts": at, "call_id": call_id}
        end |= {"name": call.name, "ok": error is None, "result": text, "error": error}
        end |= {"duration_ms": (at - call.asked).total_seconds() * 1000, "observed": True}
        self._items.append(end)
        self._totals.add_tool_call(error is None)

    def _close_open(self, when: datetime | None, why: str) -> None:
        # Calls of an earlier answer that the model was asked again without: never answered.
        for call_id, call in list(self._open.items()):
            self._end_call(call_id, call, when or call.asked, "", why)
        self._open.clear()

    def events(self) -> list[Event]:
        """The run's events; raises pydantic's ValidationError for values the contract
        refuses."""
        first = self._first or datetime.now(UTC)
        start = RunStart(
            run_id=self.run_id,
            seq=0,
            ts=first,
            task=task_text(self.history) or "",
            system_prompt=self.system_prompt,
            model=self.model or "unknown",
            params=self.params,
            tools=self.tools,
            tool_sources={str(t.get("function", t).get("name")): TOOL_SOURCE for t in self.tools},
            origin="imported",
            client=self.client,
            parent_run_id=self.parent_run_id,
            meta={"session": self._session_meta()} | self._session_id(),
        )
        kinds: dict[str, Any] = {
            "model_request": ModelRequest,
            "model_response": ModelResponse,
            "tool_start": ToolStart,
            "tool_end": ToolEnd,
        }
        events: list[Event] = [start]
        for seq, item in enumerate(self._items, 1):
            fields = dict(item)
            events.append(kinds[fields.pop("type")](run_id=self.run_id, seq=seq, **fields))
        answer = self._last_answer
        if answer is not None and not answer.get("tool_calls") and not self._open:
            self._totals.turns = self._turn
            final = self.final_answer or content_text(answer.get("content")) or None
            last = self._last or first
            events.append(
                RunEnd(
                    run_id=self.run_id,
                    seq=len(events),
                    ts=last,
                    status="completed",
                    final_answer=final,
                    totals=self._totals.totals((last - first).total_seconds() * 1000),
                )
            )
        return events

    def unknown_types(self) -> dict[str, int]:
        """How many records of each type the reader does not know."""
        return {k[1:]: n for k, n in sorted(self.record_types.items()) if k.startswith("?")}

    def _session_id(self) -> dict[str, Any]:
        """The session the run is part of, where `workbench sessions` looks (a sub-agent's
        run is part of its parent's session)."""
        session = self.meta.get("session_id")
        return {SESSION_META: session} if isinstance(session, str) and session else {}

    def _session_meta(self) -> dict[str, Any]:
        known = {k: n for k, n in sorted(self.record_types.items()) if not k.startswith("?")}
        return {
            **self.meta,
            "records": known,
            "unknown_types": self.unknown_types(),
            "unknown_records": self.unknown,
        }
