"""Model scripts: the steps a scripted model answers with, and their OpenAI wire shapes.

One format serves the in-process `ScriptedModel`, the demo and `workbench serve-model
--script` (documented in docs/script-format.md). A step becomes the same chunk dicts a real
endpoint would stream, so scripted answers go through the real assembler.
"""

from __future__ import annotations

import json
import threading
import tomllib
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_core.model.base import ModelCall, ModelError
from traces.user_files import read_text


class ScriptExhaustedError(ModelError):
    """The script has no step left for a call the agent made."""

    def __init__(self, message: str) -> None:
        super().__init__("script_exhausted", message)


class ScriptError(ValueError):
    """A script file that cannot be loaded; the message is one line for the user."""


class ScriptedToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    # A dict is sent as compact JSON; a string is sent verbatim (e.g. broken JSON on purpose).
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None

    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))


class ScriptedError(BaseModel):
    """A failed attempt: an HTTP status, or a connection drop / timeout with no status."""

    model_config = ConfigDict(extra="forbid")

    status: int | None = None
    message: str = "scripted failure"
    kind: str | None = None  # status | connection | timeout | stream_error (default from status)
    retry_after: float | None = None  # seconds; sent as a Retry-After header by the server

    def effective_kind(self) -> str:
        return self.kind or ("status" if self.status is not None else "connection")


class ScriptStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    error: ScriptedError | None = None
    delay_ms: float = 0.0  # wait before the first chunk
    chunk_size: int = Field(default=24, ge=1)  # characters of text or arguments per chunk
    when_last_tool_result_contains: str | None = None
    # Tool name -> text its offered description must contain: a script that answers the
    # way a model reads the descriptions, so an edited description changes its choice.
    when_tool_description_contains: dict[str, str] | None = None
    # Taken only by a request whose system prompt is not this text (an edited prompt).
    when_system_prompt_is_not: str | None = None
    # Taken only when one of these tools is offered with another description (an edit).
    when_tool_description_is_not: dict[str, str] | None = None

    def matches(self, call: ModelCall) -> bool:
        """Whether every `when_…` condition of the step holds for this request."""
        return (
            self._last_result_matches(call)
            and self._descriptions_match(call)
            and self._system_edited(call)
            and self._description_edited(call)
        )

    def _last_result_matches(self, call: ModelCall) -> bool:
        needle = self.when_last_tool_result_contains
        if needle is None:
            return True
        for message in reversed(call.messages):
            if message.get("role") == "tool":
                return needle in str(message.get("content") or "")
        return False

    def _descriptions_match(self, call: ModelCall) -> bool:
        wanted = self.when_tool_description_contains or {}
        offered = _offered_descriptions(call)
        return all(name in offered and text in offered[name] for name, text in wanted.items())

    def _system_edited(self, call: ModelCall) -> bool:
        if self.when_system_prompt_is_not is None:
            return True
        system = next((m.get("content") for m in call.messages if m.get("role") == "system"), None)
        return system != self.when_system_prompt_is_not

    def _description_edited(self, call: ModelCall) -> bool:
        if not self.when_tool_description_is_not:
            return True
        offered = _offered_descriptions(call)
        return any(
            name in offered and offered[name] != text
            for name, text in self.when_tool_description_is_not.items()
        )


def _offered_descriptions(call: ModelCall) -> dict[str, str]:
    """Tool name -> the description the request offers it with."""
    offered: dict[str, str] = {}
    for tool in call.tools:
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            offered[function["name"]] = str(function.get("description") or "")
    return offered


def _steps_from_data(data: Any, origin: str) -> list[ScriptStep]:
    raw = data.get("steps") if isinstance(data, dict) else data
    if not isinstance(raw, list):
        raise ScriptError(f"{origin}: expected a list of steps or a 'steps' list")
    try:
        return [ScriptStep.model_validate(step) for step in raw]
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ScriptError(f"{origin}: step field {where}: {first['msg']}") from None


def load_script(path: str | Path) -> tuple[list[ScriptStep], dict[str, Any]]:
    """Read a JSON or TOML script; return its steps and its top-level settings (e.g. name)."""
    path = Path(path)
    try:
        text = read_text(path)
    except OSError as exc:
        raise ScriptError(f"cannot read script {path}: {exc.strerror or exc}") from None
    try:
        data: Any = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ScriptError(
            f"script {path} is not valid {path.suffix[1:] or 'JSON'}: {exc}"
        ) from None
    settings = {k: v for k, v in data.items() if k != "steps"} if isinstance(data, dict) else {}
    return _steps_from_data(data, f"script {path}"), settings


class Script:
    """The remaining steps, taken in order; a step with a `when_…` condition is taken only
    by a call that matches it. Thread-safe, so the HTTP server can share one."""

    def __init__(self, steps: Sequence[ScriptStep | dict[str, Any]]) -> None:
        self._steps = [
            s if isinstance(s, ScriptStep) else ScriptStep.model_validate(s) for s in steps
        ]
        self._lock = threading.Lock()
        self.calls = 0

    def next_step(self, call: ModelCall) -> ScriptStep:
        with self._lock:
            self.calls += 1
            for position, step in enumerate(self._steps):
                if step.matches(call):
                    return _filled(self._steps.pop(position), call)
            if self._steps:
                raise ScriptExhaustedError(
                    f"call {self.calls}: none of the {len(self._steps)} remaining script steps "
                    "matches this request"
                )
            raise ScriptExhaustedError(f"call {self.calls}: the script has no steps left")

    @property
    def remaining(self) -> list[ScriptStep]:
        with self._lock:
            return list(self._steps)

    def assert_done(self) -> None:
        left = self.remaining
        if left:
            raise AssertionError(f"{len(left)} script step(s) were never used")


# Stands in a step's `content` for the last tool result of the request (its first line, cut):
# a scripted answer that goes by what a tool said, so a mocked result shows in the answer.
LAST_TOOL_RESULT = "{last_tool_result}"
_QUOTED_CHARS = 120


def _filled(step: ScriptStep, call: ModelCall) -> ScriptStep:
    if step.content is None or LAST_TOOL_RESULT not in step.content:
        return step
    result = next(
        (str(m.get("content") or "") for m in reversed(call.messages) if m.get("role") == "tool"),
        "",
    )
    line = " ".join(result.split()) or "(no tool result)"
    quoted = line if len(line) <= _QUOTED_CHARS else line[: _QUOTED_CHARS - 1] + "…"
    return step.model_copy(update={"content": step.content.replace(LAST_TOOL_RESULT, quoted)})


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def used_call_ids(messages: list[dict[str, Any]]) -> set[str]:
    """Every tool call id already in a conversation (assistant calls and tool results)."""
    used: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                used.add(call["id"])
        if isinstance(message.get("tool_call_id"), str):
            used.add(message["tool_call_id"])
    return used


def step_call_ids(step: ScriptStep, call_number: int, taken: Collection[str] = ()) -> list[str]:
    """The step's tool call ids: each call's own `id`, else `call_s<N>_<position>` with the
    first N from `call_number` up whose ids are not `taken` yet. A forked conversation
    already holds its parent's ids (a script numbers its calls from 1 again), and a
    conversation never uses one id twice."""
    number = call_number
    while True:
        ids = [call.id or f"call_s{number}_{i}" for i, call in enumerate(step.tool_calls)]
        if not any(
            call.id is None and found in taken
            for call, found in zip(step.tool_calls, ids, strict=True)
        ):
            return ids
        number += 1


def step_chunks(
    step: ScriptStep,
    *,
    model: str,
    response_id: str,
    call_number: int,
    taken: Collection[str] = (),
) -> list[dict[str, Any]]:
    """The chunk dicts an OpenAI-compatible endpoint would stream for this step; default
    call ids avoid the `taken` ones (see `step_call_ids`)."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": response_id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    size = step.chunk_size
    if step.reasoning:
        chunks += [chunk({"reasoning_content": piece}) for piece in _pieces(step.reasoning, size)]
    if step.content:
        chunks += [chunk({"content": piece}) for piece in _pieces(step.content, size)]
    ids = step_call_ids(step, call_number, taken)
    for index, call in enumerate(step.tool_calls):
        opener = {
            "index": index,
            "id": ids[index],
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [opener]}))
        for piece in _pieces(call.arguments_text(), size):
            fragment = {"index": index, "function": {"arguments": piece}}
            chunks.append(chunk({"tool_calls": [fragment]}))
    finish = step.finish_reason or ("tool_calls" if step.tool_calls else "stop")
    chunks.append(chunk({}, finish))
    if step.usage is not None:
        usage_chunk = chunk({})
        usage_chunk["choices"] = []
        usage_chunk["usage"] = step.usage
        chunks.append(usage_chunk)
    return chunks


def step_completion(
    step: ScriptStep,
    *,
    model: str,
    response_id: str,
    call_number: int,
    taken: Collection[str] = (),
) -> dict[str, Any]:
    """The JSON body a non-streaming endpoint would return for this step."""
    message: dict[str, Any] = {"role": "assistant", "content": step.content}
    if step.reasoning:
        message["reasoning_content"] = step.reasoning
    if step.tool_calls:
        ids = step_call_ids(step, call_number, taken)
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_text()},
            }
            for call, call_id in zip(step.tool_calls, ids, strict=True)
        ]
    body: dict[str, Any] = {
        "id": response_id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": step.finish_reason
                or ("tool_calls" if step.tool_calls else "stop"),
            }
        ],
    }
    if step.usage is not None:
        body["usage"] = step.usage
    return body


def error_body(error: ScriptedError) -> dict[str, Any]:
    return {"error": {"message": error.message, "type": "scripted_error", "code": error.status}}
