"""Tools as the agent sees them: a schema to offer the model and a way to run a call.

`Toolset` is the small protocol that builtin tools, user modules, MCP servers and the
mocking/replay wrappers all implement, so the loop never knows which one it is using.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

# A tool call's identity: the tool's name and its arguments in one canonical form.
CallKey: TypeAlias = tuple[str, str]


def call_key(name: str, arguments: Mapping[str, Any] | None, arguments_raw: str = "") -> CallKey:
    """The same call gets the same key: arguments as JSON with sorted keys, or their raw text
    when they did not parse. The loop spots a repeated turn by it; replay, forks and
    regression samples find the recorded result of the same call."""
    if arguments is None:
        return name, arguments_raw
    return name, json.dumps(arguments, sort_keys=True, ensure_ascii=False)


NAME_LIMIT = 64  # the longest function name chat APIs accept
_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def function_name(name: str) -> str:
    """`name` as a function name chat APIs accept: other characters become `_`, cut to 64."""
    return _BAD_NAME_CHARS.sub("_", name)[:NAME_LIMIT] or "_"


def prefixed_name(server: str, tool: str) -> str:
    """How an MCP tool is offered when another tool has its name: `<server>__<tool>`."""
    return function_name(f"{server}__{tool}")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema for the arguments
    read_only: bool = False
    return_direct: bool = False
    source: str = "builtin"  # builtin | user | mcp:<server>
    # The tool's own name at its source, when it is offered under another (a clash).
    source_name: str | None = None
    # A tool that is not a JSON function (a Responses `custom` tool, an Anthropic server
    # tool), exactly as a recorded client offered it: a fork offers it unchanged.
    wire: dict[str, Any] | None = None

    def to_openai(self) -> dict[str, Any]:
        if self.wire is not None:
            schema = dict(self.wire)
            if self.description != schema.get("description", ""):
                schema["description"] = self.description  # a fork's edit of it
            return schema
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    text: str  # what the model reads; short and readable, never a stack trace
    error: str | None = None
    truncated: bool = False
    mocked: bool = False
    replayed: bool = False
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolInvocation:
    """One tool call as the tool hooks see it."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    turn: int


# A hook wraps the tool call: it receives the invocation and the next step in the chain, and
# returns what the next one would (authorisation, approval, mocking, replay).
ToolRun: TypeAlias = Callable[[ToolInvocation], Awaitable[ToolResult]]
ToolHook: TypeAlias = Callable[[ToolInvocation, ToolRun], Awaitable[ToolResult]]


@runtime_checkable
class Toolset(Protocol):
    def specs(self) -> list[ToolSpec]: ...

    async def call(self, name: str, arguments: dict[str, Any], call_id: str) -> ToolResult:
        """Run one call with already-parsed arguments. Must not raise for tool failures."""
        ...


@runtime_checkable
class ChangingToolset(Toolset, Protocol):
    """A toolset whose tools may change mid-run (an MCP server's list_changed); the loop
    offers the new set from the next turn after a source's version moves."""

    @property
    def tools_versions(self) -> dict[str, int]:
        """Source (e.g. `mcp:fs`) -> a number that changes whenever its tools do."""
        ...


def tool_versions(toolsets: list[Toolset]) -> dict[str, int]:
    """Source -> tools version, over every toolset whose tools may change."""
    versions: dict[str, int] = {}
    for toolset in toolsets:
        if isinstance(toolset, ChangingToolset):
            versions.update(toolset.tools_versions)
    return versions
