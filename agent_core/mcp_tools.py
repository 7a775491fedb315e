"""MCP servers as toolsets: the `mcpServers` config, schema and result conversion, naming.

    async with open_mcp_toolsets(Path("mcp.json"), recorder) as toolsets:
        agent = Agent(model, [*builtins, *toolsets], config)

Every JSON-RPC frame of every server becomes an `mcp_message` event stamped with the
recorder's current turn. A tool's failure (JSON-RPC error, `isError`, crash, hang, bad
arguments) comes back as a short error result; only a server that cannot start raises
(`McpStartError`), and a bad config file raises `McpConfigError`.

Tool names: a tool keeps its own name unless another configured server offers a tool of the
same name; then each of them is offered as `<server>__<tool>` (a clash with a built-in or user
tool is resolved the same way, by the loop's `ToolBox`). Characters a model API does not
accept in a function name become `_`, and names are cut to 64 characters. A spec offered
under another name carries the server's own in `source_name`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Collection
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from agent_core.mcp_client import (
    DEFAULT_START_TIMEOUT_S,
    FrameDirection,
    FrameObserver,
    HttpServerConfig,
    McpCallError,
    McpConnection,
    McpStartError,
    ServerConfig,
    StdioServerConfig,
    connect,
)
from agent_core.tools.base import ToolResult, ToolSpec, function_name, prefixed_name
from traces.events import McpMessage
from traces.recorder import Recorder
from traces.text import one_line
from traces.user_files import read_text

REFRESH_WAIT_S = 5.0

__all__ = [
    "McpConfigError",
    "McpStartError",
    "McpToolset",
    "convert_result",
    "convert_schema",
    "load_mcp_config",
    "mcp_secrets",
    "open_mcp_toolsets",
    "parse_mcp_config",
]

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_HTTP_TYPES = {"http", "streamable-http", "streamable_http", "streamableHttp"}
# Schema keywords whose value is a map of name -> subschema (the names are not keywords).
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("default", "const", "examples", "enum")  # data, not schemas
_DROPPED_KEYS = ("$schema", "title")


class McpConfigError(ValueError):
    """The mcpServers file cannot be used; the message names the file and the problem."""


# -- configuration -------------------------------------------------------------------------


def load_mcp_config(path: Path) -> list[ServerConfig]:
    try:
        text = read_text(path)
    except OSError as exc:
        raise McpConfigError(f"cannot read MCP config {path}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"MCP config {path} is not valid JSON (line {exc.lineno}: {exc.msg})"
        ) from None
    return parse_mcp_config(data, base_dir=path.resolve().parent, source=str(path))


def parse_mcp_config(
    data: Any, *, base_dir: Path, source: str = "MCP config"
) -> list[ServerConfig]:
    """The common format: {"mcpServers": {name: {command, args, env, cwd} | {url, headers}}}.

    `${VAR}` and `${VAR:-default}` in strings are read from the environment, so secrets can
    stay out of the file; a relative `cwd` is relative to the config file's folder. Servers
    with `"disabled": true` are skipped.
    """
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f'{source}: expected an object with an "mcpServers" object inside')
    configs: list[ServerConfig] = []
    for name, entry in servers.items():
        where = f"{source}: server {name!r}"
        if not isinstance(entry, dict):
            raise McpConfigError(f"{where}: expected an object")
        if entry.get("disabled") is True:
            continue
        configs.append(_parse_server(name, entry, base_dir, where))
    return configs


def _parse_server(name: str, entry: dict[str, Any], base_dir: Path, where: str) -> ServerConfig:
    kind = entry.get("type") or entry.get("transport")
    if kind == "sse":
        raise McpConfigError(
            f"{where}: the legacy SSE transport is not supported; use a streamable HTTP url"
        )
    if "url" in entry or kind in _HTTP_TYPES:
        url = _expand(_string(entry.get("url"), f"{where}: url"), where)
        if not url.startswith(("http://", "https://")):
            raise McpConfigError(f"{where}: url must start with http:// or https://")
        headers = _string_map(entry.get("headers"), f"{where}: headers")
        return HttpServerConfig(name, url, {k: _expand(v, where) for k, v in headers.items()})
    if "command" not in entry:
        raise McpConfigError(f'{where}: needs "command" (stdio) or "url" (streamable HTTP)')
    command = _expand(_string(entry.get("command"), f"{where}: command"), where)
    args = entry.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
        raise McpConfigError(f"{where}: args must be a list of strings")
    env = _string_map(entry.get("env"), f"{where}: env")
    cwd = entry.get("cwd")
    if cwd is not None:
        cwd = str(base_dir / _expand(_string(cwd, f"{where}: cwd"), where))
    return StdioServerConfig(
        name,
        command,
        [_expand(str(a), where) for a in args],
        {k: _expand(v, where) for k, v in env.items()},
        cwd,
    )


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise McpConfigError(f"{what} must be a non-empty string")
    return value


def _string_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise McpConfigError(f"{what} must be an object of strings")
    return dict(value)


def _expand(text: str, where: str) -> str:
    def substitute(match: re.Match[str]) -> str:
        value = os.environ.get(match.group(1), match.group(2))
        if value is None:
            raise McpConfigError(f"{where}: environment variable {match.group(1)} is not set")
        return value

    return _ENV_REF.sub(substitute, text)


_SECRET_NAME = re.compile(r"(?i)key|token|secret|password|passwd|auth|credential")


def mcp_secrets(configs: list[ServerConfig]) -> list[str]:
    """Values from the config that must not reach a trace: every header value, and env values
    whose name looks like a secret (a server may echo its environment in a tool result)."""
    found: list[str] = []
    for config in configs:
        if isinstance(config, HttpServerConfig):
            found += [v.split(" ", 1)[-1] for v in config.headers.values()]
        else:
            found += [v for k, v in config.env.items() if _SECRET_NAME.search(k)]
    return [value for value in found if len(value) >= 4]


# -- conversion ----------------------------------------------------------------------------


def read_only_hint(annotations: Any) -> bool:
    """An MCP tool is read-only only when it says `readOnlyHint: true` and does not also
    say `destructiveHint: true` (hints that disagree count as a tool that changes things)."""
    if not isinstance(annotations, dict):
        return False
    return (
        annotations.get("readOnlyHint") is True and annotations.get("destructiveHint") is not True
    )


def convert_schema(schema: Any) -> dict[str, Any]:
    """An MCP input schema as a function's parameters: `$schema` and `title` dropped at every
    level (descriptions kept), and always an object with `properties`."""
    converted = _clean(schema) if isinstance(schema, dict) else {}
    converted.setdefault("type", "object")
    if converted.get("type") == "object":
        converted.setdefault("properties", {})
    return converted


def _clean(schema: dict[str, Any]) -> dict[str, Any]:
    cleaned: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED_KEYS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            value = {name: _clean_any(sub) for name, sub in value.items()}
        elif isinstance(value, list) and (key in _SCHEMA_LISTS or key == "items"):
            value = [_clean_any(sub) for sub in value]
        elif isinstance(value, dict) and key not in _SCHEMA_VALUES:
            value = _clean(value)  # items, additionalProperties, not, if/then/else, …
        cleaned[key] = value
    return cleaned


def _clean_any(value: Any) -> Any:
    return _clean(value) if isinstance(value, dict) else value


def convert_result(result: dict[str, Any]) -> ToolResult:
    """A tools/call result as the model reads it: text blocks verbatim, structured content as
    JSON when there is no text, images, audio and binary resources noted by type and size."""
    parts: list[str] = []
    noted: list[str] = []
    for block in result.get("content") or []:
        text, note = _block_text(block)
        parts.append(text)
        if note:
            noted.append(note)
    structured = result.get("structuredContent")
    has_text = any(part.strip() for part in parts)
    if structured is not None and not has_text:
        parts.append(json.dumps(structured, ensure_ascii=False))
    text = "\n".join(parts)
    meta: dict[str, Any] = {}
    if structured is not None:
        meta["structured_content"] = structured
    if noted:
        meta["non_text"] = noted
    if result.get("isError"):
        message = one_line(text, 300) or "the tool reported an error without details"
        return ToolResult(False, f"Error: {message}", "mcp_tool_error", meta=meta)
    return ToolResult(True, text, meta=meta)


def _block_text(block: dict[str, Any]) -> tuple[str, str | None]:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", "")), None
    if kind in ("image", "audio"):
        size = len(block.get("data") or "") * 3 // 4
        note = f"{kind} {block.get('mimeType', 'unknown type')}, {size} bytes"
        return f"[{note}]", note
    if kind == "resource_link":
        label = block.get("name") or block.get("title") or ""
        return f"[resource link: {label} {block.get('uri', '')}]".replace("  ", " "), None
    if kind == "resource":
        resource = block.get("resource") or {}
        uri = resource.get("uri", "")
        if "text" in resource:
            return f"[resource {uri}]\n{resource['text']}", None
        size = len(resource.get("blob") or "") * 3 // 4
        note = f"resource {uri} ({resource.get('mimeType', 'binary')}), {size} bytes"
        return f"[{note}]", note
    return f"[{kind} content]", f"{kind} content"


def _error_result(exc: McpCallError) -> ToolResult:
    meta: dict[str, Any] = {"mcp_error": exc.kind}
    if exc.kind == "timeout":
        meta["timeout"] = True  # the loop ends the run as a tool timeout, as for any tool
    return ToolResult(False, f"Error: {exc}", f"mcp_{exc.kind}", meta=meta)


# -- toolsets ------------------------------------------------------------------------------


class _Naming:
    """Decides each tool's offered name from every server's current tool list."""

    def __init__(self) -> None:
        self.toolsets: list[McpToolset] = []

    def offered(self, server: str, tool: str) -> str:
        clashes = sum(1 for toolset in self.toolsets if tool in toolset.connection_tool_names())
        return prefixed_name(server, tool) if clashes > 1 else function_name(tool)


class McpToolset:
    """The tools of one MCP server, as the loop sees them (`Toolset` protocol)."""

    def __init__(self, connection: McpConnection, naming: _Naming, tool_timeout_s: float) -> None:
        self.connection = connection
        self.server = connection.name
        self.source = f"mcp:{connection.name}"
        self.tool_timeout_s = tool_timeout_s
        self._naming = naming

    def connection_tool_names(self) -> list[str]:
        return [str(tool.get("name")) for tool in self.connection.tools]

    @property
    def tools_versions(self) -> dict[str, int]:
        """Bumped each time the server's tool list is fetched (on list_changed too)."""
        return {self.source: self.connection.tools_version}

    def tool_names(self) -> dict[str, str]:
        """Offered name -> the server's own name, for the current tool list."""
        return {
            self._naming.offered(self.server, name): name for name in self.connection_tool_names()
        }

    def specs(self) -> list[ToolSpec]:
        specs = []
        for tool in self.connection.tools:
            name = str(tool.get("name"))
            annotations = tool.get("annotations") or {}
            offered = self._naming.offered(self.server, name)
            specs.append(
                ToolSpec(
                    name=offered,
                    description=tool.get("description") or tool.get("title") or "",
                    parameters=convert_schema(tool.get("inputSchema")),
                    # A server's hint: calls may run concurrently, and live in a re-run.
                    read_only=read_only_hint(annotations),
                    source=self.source,
                    source_name=name if offered != name else None,
                )
            )
        return specs

    async def call(self, name: str, arguments: dict[str, Any], call_id: str) -> ToolResult:
        names = self.tool_names()
        original = names.get(name, name if name in names.values() else None)
        if original is None:
            known = ", ".join(sorted(names)) or "none"
            return ToolResult(
                False,
                f"Error: MCP server '{self.server}' has no tool {name!r} (tools: {known})",
                "unknown_tool",
            )
        return await self.call_server_tool(original, arguments)

    async def call_server_tool(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a tool by the server's own name, listed or not (for debugging a server)."""
        try:
            raw = await self.connection.call_tool(tool, arguments, self.tool_timeout_s)
        except McpCallError as exc:
            return _error_result(exc)
        # A tool that changes the server's tools announces it before its result; wait for
        # the new list, so that the next turn offers it (a bounded wait: the list may fail).
        with anyio.move_on_after(min(self.tool_timeout_s, REFRESH_WAIT_S)):
            await self.connection.tools_settled()
        return convert_result(raw)

    async def refresh(self) -> list[ToolSpec]:
        """List the server's tools again (also done on its list_changed notification).

        Raises `McpCallError` when the listing fails; the previous list stays in use."""
        await self.connection.list_tools()
        return self.specs()


@asynccontextmanager
async def open_mcp_toolsets(
    config_path: Path,
    recorder: Recorder,
    *,
    tool_timeout_s: float = 30.0,
    startup_timeout_s: float = DEFAULT_START_TIMEOUT_S,
    servers: Collection[str] | None = None,
    accept_elicitation: bool = False,
) -> AsyncIterator[list[McpToolset]]:
    """Start every configured server (or only `servers`), one toolset each, in config order.

    Raises `McpConfigError` for a bad file or an unknown name in `servers`, and
    `McpStartError` when a server cannot start (the ones already started are stopped).
    """
    configs = load_mcp_config(config_path)
    if servers is not None:
        known = {config.name for config in configs}
        missing = [name for name in servers if name not in known]
        if missing:
            raise McpConfigError(
                f"{config_path}: no server named {', '.join(map(repr, missing))} "
                f"(servers: {', '.join(sorted(known)) or 'none'})"
            )
        configs = [config for config in configs if config.name in servers]
    naming = _Naming()
    async with AsyncExitStack() as stack:
        for config in configs:
            connection = await stack.enter_async_context(
                connect(
                    config,
                    _frame_recorder(recorder, config.name),
                    startup_timeout_s=startup_timeout_s,
                    accept_elicitation=accept_elicitation,
                )
            )
            naming.toolsets.append(McpToolset(connection, naming, tool_timeout_s))
        yield list(naming.toolsets)


def _frame_recorder(recorder: Recorder, server: str) -> FrameObserver:
    def record(direction: FrameDirection, frame: dict[str, Any]) -> None:
        recorder.emit(McpMessage, server=server, direction=direction, frame=frame)

    return record
