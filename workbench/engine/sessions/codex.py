"""Codex CLI's rollouts as runs: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`.

A rollout is JSON Lines of `{"timestamp", "type", "payload"}`. `session_meta` names the
session (its id, the CLI's version, the working folder, the base instructions: the system
prompt); `turn_context` the model; `response_item` holds the conversation as Responses API
items, as Codex sends them: `message` (developer, user, assistant), `reasoning`,
`function_call` and `custom_tool_call` (the freeform `apply_patch`), and their
`function_call_output` / `custom_tool_call_output`. The items the model produced between two
inputs are one answer; `token_usage_record` (or `event_msg` `token_count`) after it gives
its usage. `event_msg`, `world_state` and `compacted` records are counted; any other type is
kept whole in `meta.session.unknown_records`.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from agent_core.wire import responses
from agent_core.wire.answer import usage
from agent_core.wire.chat import text_of
from workbench.engine.sessions.session import (
    SessionRun,
    read_lines,
    run_id_of,
    timestamp,
)

DEFAULT_ROOT = Path("~/.codex/sessions")
KNOWN_TYPES = frozenset({"event_msg", "world_state", "compacted", "token_usage_record"})
# Items the model produces; every other item is input the agent sends.
_MODEL_ITEMS = frozenset(
    {
        "reasoning",
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "web_search_call",
        "tool_search_call",
    }
)
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})


def session_files(root: Path) -> list[Path]:
    """The rollouts under `root` (a rollout itself or any folder above them)."""
    if not root.is_dir():  # a file, or what is not one: refused when it is read
        return [root]
    return sorted(root.rglob("rollout-*.jsonl"))


class _Reader:
    def __init__(self, run: SessionRun) -> None:
        self.run = run
        self.answer: list[dict[str, Any]] = []
        self.when: datetime | None = None
        self.asked: datetime | None = None
        self.usage: dict[str, Any] | None = None

    def read(self, records: list[tuple[int, dict[str, Any]]]) -> SessionRun:
        for _, record in records:
            kind = str(record.get("type"))
            payload = record.get("payload")
            payload = payload if isinstance(payload, dict) else {}
            when = timestamp(record.get("timestamp"))
            if kind == "response_item":
                self.item(when, payload)
            elif kind == "session_meta":
                self.session(payload)
            elif kind == "turn_context":
                if isinstance(payload.get("model"), str):
                    self.run.model = payload["model"]
            elif kind == "token_usage_record":
                self.counted(payload.get("usage"))
            elif kind == "event_msg":
                self.event(payload)
            self.run.saw(kind, record, known=kind in KNOWN_TYPES or kind in _READ_TYPES)
        self.flush()
        return self.run

    def item(self, when: datetime | None, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind in _MODEL_ITEMS or (kind == "message" and item.get("role") == "assistant"):
            if not self.answer and self.asked is None:
                self.asked = self.run.last_seen
            self.answer.append(item)
            self.when = when or self.when
            return
        self.flush()
        if kind in _OUTPUTS:
            output = item.get("output")
            text = output if isinstance(output, str) else text_of(output)
            self.run.result(when, str(item.get("call_id")), text, ok=True)
        elif kind == "message":
            for message in responses.input_messages([item]):
                if isinstance(message, dict):
                    self.run.context(when, message)

    def counted(self, raw: Any) -> None:
        if isinstance(raw, dict):
            self.usage = usage(
                raw.get("input_tokens"), raw.get("output_tokens"), raw.get("total_tokens")
            )
        self.flush()

    def event(self, payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        if kind == "token_count" and self.answer:
            info = payload.get("info")
            last = info.get("last_token_usage") if isinstance(info, dict) else None
            self.counted(last)
        elif kind == "task_complete" and isinstance(payload.get("last_agent_message"), str):
            self.flush()
            self.run.final_answer = payload["last_agent_message"]

    def flush(self) -> None:
        if not self.answer:
            return
        items, self.answer = self.answer, []
        messages = responses.input_messages(items)
        message = next(
            (m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"),
            {"role": "assistant", "content": None},
        )
        message = _with_custom_calls(message, items)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        self.run.answer(self.when, message, finish, self.usage, self.asked)
        self.usage = None
        self.asked = None

    def session(self, meta: dict[str, Any]) -> None:
        run = self.run
        instructions = meta.get("base_instructions")
        text = instructions.get("text") if isinstance(instructions, dict) else instructions
        if isinstance(text, str) and text and run.system_prompt is None:
            run.system_prompt = text
            run.history.insert(0, {"role": "system", "content": text})
        originator, version = meta.get("originator"), meta.get("cli_version")
        if isinstance(originator, str):
            run.client = f"{originator} {version}" if isinstance(version, str) else originator
        for key in ("id", "cwd", "model_provider", "source"):
            if isinstance(meta.get(key), str):
                run.meta.setdefault("session_id" if key == "id" else key, meta[key])


_READ_TYPES = frozenset({"response_item", "session_meta", "turn_context"})


def _with_custom_calls(message: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    """A freeform tool call (`custom_tool_call`: apply_patch's patch text) as a tool call of
    the answer, when the codec left it out; its input as the `input` argument."""
    calls = list(message.get("tool_calls") or [])
    ids = {call.get("id") for call in calls if isinstance(call, dict)}
    for item in items:
        call_id = item.get("call_id")
        if item.get("type") != "custom_tool_call" or call_id in ids:
            continue
        arguments = json.dumps({"input": item.get("input")}, ensure_ascii=False)
        calls.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": item.get("name"), "arguments": arguments},
            }
        )
    return {**message, "tool_calls": calls} if calls else message


def read_rollout(path: Path) -> tuple[list[SessionRun], list[str]]:
    """The run of one rollout, and the problem lines of its bad lines. Raises SessionError
    for a file that cannot be read."""
    lines = read_lines(path)
    session_id = next(
        (
            r["payload"]["id"]
            for _, r in lines.records
            if r.get("type") == "session_meta"
            and isinstance(r.get("payload"), dict)
            and isinstance(r["payload"].get("id"), str)
        ),
        path.stem,
    )
    run = _Reader(SessionRun(run_id_of(session_id), "responses", "codex", path)).read(lines.records)
    return [run], lines.problems
