"""Running the tool calls of one turn: parse, record, hook, time out, cap, record.

The loop decides the order (serial, or concurrent when every call is read-only) and yields
events between the steps; this module does each step. Nothing here raises for a tool's own
failure: bad arguments, an unknown tool, an exception or a timeout all become a short error
result the model can read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from agent_core.tools.base import (
    ToolHook,
    ToolInvocation,
    ToolResult,
    ToolRun,
    Toolset,
    ToolSpec,
    prefixed_name,
)
from agent_core.tools.selection import select_tools
from agent_core.wire.arguments import parse_arguments
from traces.events import ToolEnd, ToolStart
from traces.recorder import Recorder
from traces.text import one_line

REASONING_ARG = "reasoning"
REASONING_SCHEMA = {
    "type": "string",
    "description": "Optional: one sentence on why you call this tool now (logged, not used).",
}


class ToolConfigError(ValueError):
    """The toolsets or overrides given to a run do not fit together."""


ToolCaller = Callable[[Any], Awaitable[ToolResult]]


@dataclass
class PendingCall:
    call_id: str
    name: str
    arguments_raw: str
    arguments: dict[str, Any] | None
    parse_error: str | None
    reasoning: str | None
    spec: ToolSpec | None
    toolset: Toolset | None
    toolset_name: str | None = None  # the name its toolset offered it under

    @property
    def read_only(self) -> bool:
        return self.spec is not None and self.spec.read_only

    @property
    def return_direct(self) -> bool:
        return self.spec is not None and self.spec.return_direct


class ToolBox:
    """Every registered tool by name, with per-run description overrides applied.

    Names are unique: an MCP tool whose name another tool already has is offered as
    `<server>__<name>` (its `source_name` keeps the server's own); two other tools with one
    name are a `ToolConfigError` (drop one, e.g. with `--builtin-tools`).
    """

    def __init__(
        self,
        toolsets: list[Toolset],
        overrides: dict[str, str] | None = None,
        offer_reasoning: bool = False,
    ) -> None:
        self.offer_reasoning = offer_reasoning
        # offered name -> (spec as offered, its toolset, the name the toolset gave it)
        self._entries: dict[str, tuple[ToolSpec, Toolset, str]] = {}
        registered = [(spec, toolset) for toolset in toolsets for spec in toolset.specs()]
        taken = {spec.name for spec, _ in registered if not spec.source.startswith("mcp:")}
        for spec, toolset in registered:
            offered = spec
            if spec.source.startswith("mcp:") and spec.name in taken:
                server = spec.source.removeprefix("mcp:")
                offered = replace(
                    spec,
                    name=prefixed_name(server, spec.name),
                    source_name=spec.source_name or spec.name,
                )
            if offered.name in self._entries:
                other = self._entries[offered.name][0].source
                raise ToolConfigError(
                    f"tool {offered.name!r} is provided by both {other} and {offered.source}; "
                    "drop one (--builtin-tools NAMES or --no-builtin-tools for the built-ins)"
                )
            self._entries[offered.name] = (offered, toolset, spec.name)
        for name, description in (overrides or {}).items():
            if name not in self._entries:
                known = ", ".join(sorted(self._entries)) or "none"
                raise ToolConfigError(f"no tool named {name!r} to override (tools: {known})")
            spec, toolset, own = self._entries[name]
            self._entries[name] = (replace(spec, description=description), toolset, own)

    @property
    def specs(self) -> list[ToolSpec]:
        return [spec for spec, _, _ in self._entries.values()]

    def offer(self, query: str, max_tools: int, required: str | None = None) -> Offer:
        """The tools one request carries: at most `max_tools`, the most relevant to `query`,
        and always `required` (a tool that `tool_choice` names must be among them)."""
        forced = [spec for spec in self.specs if spec.name == required]
        others = [spec for spec in self.specs if spec.name != required]
        names = {spec.name for spec in select_tools(others, query, max_tools - len(forced))}
        names.update(spec.name for spec in forced)
        chosen = [spec for spec in self.specs if spec.name in names]
        dropped = [name for name in self._entries if name not in names]
        return Offer(self, chosen, [self.schema(spec) for spec in chosen], dropped)

    def schema(self, spec: ToolSpec) -> dict[str, Any]:
        """The spec in OpenAI format, with the optional reasoning argument when offered."""
        schema = spec.to_openai()
        if spec.wire is None and self._adds_reasoning(spec):
            parameters = dict(spec.parameters)
            properties = dict(parameters.get("properties") or {})
            properties[REASONING_ARG] = REASONING_SCHEMA
            parameters["properties"] = properties
            parameters.setdefault("type", "object")
            schema["function"]["parameters"] = parameters
        return schema

    def _adds_reasoning(self, spec: ToolSpec) -> bool:
        # A schema that already carries our own reasoning property (a replayed recording)
        # still counts as offered, so the argument is stripped the same way again.
        existing = (spec.parameters.get("properties") or {}).get(REASONING_ARG)
        return self.offer_reasoning and (existing is None or existing == REASONING_SCHEMA)

    def prepare(self, call_id: str, name: str, raw: str, offered: set[str]) -> PendingCall:
        parsed = parse_arguments(raw)
        arguments, parse_error = parsed.value, parsed.error
        entry = self._entries.get(name) if name in offered else None
        spec, toolset, own = entry if entry else (None, None, None)
        reasoning = None
        if arguments is not None and spec is not None and self._adds_reasoning(spec):
            value = arguments.pop(REASONING_ARG, None)
            reasoning = value if isinstance(value, str) else None
        return PendingCall(
            call_id, name, raw, arguments, parse_error, reasoning, spec, toolset, own
        )


@dataclass(frozen=True)
class Offer:
    """The tools offered to the model, chosen from a `ToolBox`, and the ones left out."""

    toolbox: ToolBox
    specs: list[ToolSpec]
    schemas: list[dict[str, Any]]
    dropped: list[str]

    @property
    def names(self) -> list[str]:
        return [spec.name for spec in self.specs]

    @property
    def renamed(self) -> dict[str, str]:
        """Offered name -> the tool's own name at its source, for renamed tools."""
        return {spec.name: spec.source_name for spec in self.specs if spec.source_name}

    def prepare(self, call_id: str, name: str, raw: str) -> PendingCall:
        return self.toolbox.prepare(call_id, name, raw, set(self.names))


def record_start(recorder: Recorder, call: PendingCall) -> None:
    recorder.emit(
        ToolStart,
        call_id=call.call_id,
        name=call.name,
        arguments_raw=call.arguments_raw,
        arguments=call.arguments,
        parse_error=call.parse_error,
        source=call.spec.source if call.spec else "unknown",
        source_name=call.spec.source_name if call.spec else None,
        reasoning=call.reasoning,
    )


def record_end(recorder: Recorder, call: PendingCall, result: ToolResult, ms: float) -> None:
    recorder.emit(
        ToolEnd,
        call_id=call.call_id,
        name=call.name,
        ok=result.ok,
        result=result.text,
        error=result.error,
        duration_ms=round(ms, 3),
        truncated=result.truncated,
        mocked=result.mocked,
        replayed=result.replayed,
    )


async def execute(
    call: PendingCall,
    turn: int,
    hooks: list[ToolHook],
    timeout_s: float,
    max_chars: int,
    offered: list[str],
) -> tuple[ToolResult, float]:
    """Run one call through the hooks under its timeout; (result, duration in ms)."""
    started = time.perf_counter()
    result = await _execute(call, turn, hooks, timeout_s, offered)
    return cap(result, max_chars), (time.perf_counter() - started) * 1000


async def _execute(
    call: PendingCall,
    turn: int,
    hooks: list[ToolHook],
    timeout_s: float,
    offered: list[str],
) -> ToolResult:
    if call.spec is None or call.toolset is None:
        names = ", ".join(offered) or "none"
        return ToolResult(
            False, f"Error: unknown tool {call.name!r}. Tools: {names}.", "unknown_tool"
        )
    if call.arguments is None:
        return ToolResult(False, f"Error: {call.name}: {call.parse_error}", "bad_json")
    toolset = call.toolset
    renamed = {call.name: call.toolset_name or call.name}

    async def base(invocation: ToolInvocation) -> ToolResult:
        # Hooks see the name the model used; the toolset is asked by the name it gave.
        name = renamed.get(invocation.name, invocation.name)
        return await toolset.call(name, invocation.arguments, invocation.call_id)

    chain: ToolRun = base
    for hook in reversed(hooks):
        chain = _wrap(hook, chain)
    invocation = _invocation(call, turn)
    try:
        async with asyncio.timeout(timeout_s):
            return await chain(invocation)
    except TimeoutError:
        return ToolResult(
            False,
            f"Error: {call.name} timed out after {timeout_s:g} s",
            "timeout",
            meta={"timeout": True},
        )
    except Exception as exc:  # a toolset or hook broke its promise not to raise
        text = one_line(f"{type(exc).__name__}: {exc}", 300)
        return ToolResult(False, f"Error: {call.name} failed: {text}", "exception")


def _wrap(hook: ToolHook, inner: ToolRun) -> ToolRun:
    async def wrapped(invocation: ToolInvocation) -> ToolResult:
        return await hook(invocation, inner)

    return wrapped


def _invocation(call: PendingCall, turn: int) -> ToolInvocation:
    return ToolInvocation(call.call_id, call.name, dict(call.arguments or {}), turn)


def cap(result: ToolResult, max_chars: int) -> ToolResult:
    if max_chars <= 0 or len(result.text) <= max_chars:
        return result
    hidden = len(result.text) - max_chars
    note = f"\n[truncated: {hidden} more characters not shown; ask for a narrower part]"
    return replace(result, text=result.text[:max_chars] + note, truncated=True)
