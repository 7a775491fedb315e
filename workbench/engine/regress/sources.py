"""Where a suite's or a lint's tools come from: builtin, `module:registry`, an MCP config,
a JSON file of schemas, or the schemas a recorded run offered.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from agent_core.tools.base import Toolset
from traces.events import RunStart
from traces.reader import read_trace
from traces.recorder import Recorder
from traces.user_files import read_text
from traces.versions import NewerSchemaError


class ToolSourceError(Exception):
    """The tools cannot be loaded; one line saying what to do."""


def is_mcp_config(path: Path) -> bool:
    try:
        data = json.loads(read_text(path))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "mcpServers" in data


@asynccontextmanager
async def open_tools(
    reference: str | None,
    *,
    root: Path,
    recorder: Recorder | None = None,
    builtins: list[str] | None = None,
) -> AsyncIterator[list[Toolset]]:
    """The toolsets named by `reference`, open for the duration of the block.

    `builtins` names the built-in tools to offer: with "builtin" only these, with anything
    else these next to it; None keeps "builtin" at all four and adds none elsewhere."""
    from agent_core.tools.builtin import builtin_tools, chosen_builtins

    try:
        chosen: list[Toolset] = [] if builtins is None else [chosen_builtins(root, builtins)]
    except ValueError as exc:
        raise ToolSourceError(f"builtin_tools: {exc}") from None
    if reference == "builtin":
        yield chosen if builtins is not None else [builtin_tools(root)]
        return
    if reference is None:
        yield chosen
        return
    async with _open_reference(reference, root=root, recorder=recorder) as toolsets:
        yield [*chosen, *toolsets]


@asynccontextmanager
async def _open_reference(
    reference: str, *, root: Path, recorder: Recorder | None
) -> AsyncIterator[list[Toolset]]:
    path = Path(reference)
    if path.suffix == ".json":
        if not path.is_file():  # noqa: ASYNC240 - one stat before any server starts
            raise ToolSourceError(f"tools {reference!r}: no such file")
        opened = False
        if not is_mcp_config(path):
            raise ToolSourceError(
                f"tools {reference!r}: not an MCP config (no mcpServers); a schema file "
                "can be linted but not run"
            )
        from agent_core.mcp_tools import McpConfigError, McpStartError, open_mcp_toolsets

        recorder = recorder or Recorder("regress-mcp")
        try:
            async with open_mcp_toolsets(path, recorder) as toolsets:
                opened = True
                yield list(toolsets)
        except (McpConfigError, McpStartError) as exc:
            if opened:
                raise
            raise ToolSourceError(str(exc)) from None
        return
    from agent_core.tools.loader import ToolLoadError, load_toolset

    # `workbench` runs as a console script; user tool modules live in the working folder.
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        yield [load_toolset(reference)]
    except ToolLoadError as exc:
        raise ToolSourceError(str(exc)) from None


def schemas_of(toolsets: list[Toolset]) -> list[dict[str, Any]]:
    return [spec.to_openai() for toolset in toolsets for spec in toolset.specs()]


def schemas_from_file(path: Path) -> list[dict[str, Any]]:
    """Tool schemas from JSON: a list, `{"tools": [...]}` (MCP tools/list), or one tool."""
    try:
        data = json.loads(read_text(path))
    except OSError as exc:
        raise ToolSourceError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise ToolSourceError(f"{path}: not valid JSON ({exc})") from exc
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    elif isinstance(data, dict) and ("name" in data or "function" in data):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise ToolSourceError(f'{path}: expected a list of tool schemas or {{"tools": [...]}}')
    return data


def schemas_from_run(path: Path) -> list[dict[str, Any]]:
    try:
        events = read_trace(path).events
    except NewerSchemaError as exc:
        raise ToolSourceError(str(exc)) from exc
    except OSError as exc:
        raise ToolSourceError(f"cannot read {path}: {exc.strerror or exc}") from exc
    start = next((e for e in events if isinstance(e, RunStart)), None)
    if start is None:
        raise ToolSourceError(f"{path}: no run_start; not a recorded run")
    return list(start.tools)
