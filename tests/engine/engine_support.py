"""Recorded runs for the engine tests: the real loop, a scripted model, real tools.

Every trace here is written by the real `Agent` through `JsonlWriter`; only the model's
answers are scripted (or served by the real local `ModelServer`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent_core.agent import Agent, AgentConfig, RunResult
from agent_core.model.base import ChatModel
from agent_core.model.scripted import ScriptedModel
from agent_core.tools.base import ToolResult, Toolset, ToolSpec
from agent_core.tools.builtin import builtin_tools
from agent_core.tools.registry import ToolRegistry
from traces.home import traces_dir
from traces.writer import JsonlWriter


class NoteArgs(BaseModel):
    text: str


def note_tools(folder: Path) -> ToolRegistry:
    """A tool with a side effect (it appends to a file), so it is not read-only."""
    tools = ToolRegistry(source="user")

    @tools.tool(NoteArgs, description="Save a note for later. Appends the text to notes.txt.")
    def save_note(args: NoteArgs) -> str:
        with (folder / "notes.txt").open("a", encoding="utf-8") as handle:
            handle.write(args.text + "\n")
        return f"saved note ({len(args.text)} characters)"

    return tools


@dataclass
class Project:
    home: Path
    root: Path

    def toolsets(self) -> list[Toolset]:
        return [builtin_tools(self.root), note_tools(self.root)]

    async def record(
        self,
        model: ChatModel | list[dict[str, Any]],
        *,
        task: str = "What does config.toml say about the port, times two?",
        toolsets: list[Toolset] | None = None,
        **config: Any,
    ) -> tuple[Path, RunResult]:
        chat = ScriptedModel(model) if isinstance(model, list) else model
        run_config = AgentConfig(task=task, system_prompt="You are a careful agent.", **config)
        writer = JsonlWriter(traces_dir(self.home), run_config.run_id)
        agent = Agent(chat, toolsets or self.toolsets(), run_config, sinks=[writer])
        result = await agent.run()
        return writer.path, result


class SearchTools:
    """One tool with a nested object parameter, its schema as given (as an MCP server's)."""

    def __init__(self, parameters: dict[str, Any]) -> None:
        self.parameters = parameters

    def specs(self) -> list[ToolSpec]:
        return [ToolSpec("search", "Search the notes.", self.parameters, read_only=True)]

    async def call(self, name: str, arguments: dict[str, Any], call_id: str) -> ToolResult:
        return ToolResult(True, "no notes match")


def search_schema(**changes: Any) -> dict[str, Any]:
    """The search tool's parameters: `query`, and `filters`, an object holding `limit`,
    `kinds` and `since`. `limit__type="string"` sets the `type` keyword of `limit` (of
    `kinds` or of `filters` itself alike)."""
    limit: dict[str, Any] = {"type": "integer", "default": 10}
    kinds: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
    filters: dict[str, Any] = {
        "type": "object",
        "properties": {"limit": limit, "kinds": kinds, "since": {"type": "string"}},
        "required": ["limit"],
    }
    schemas = {"limit": limit, "kinds": kinds, "filters": filters}
    for change, value in changes.items():
        schema, keyword = change.split("__")
        schemas[schema][keyword] = value
    return {
        "type": "object",
        "properties": {"query": {"type": "string"}, "filters": filters},
        "required": ["query"],
    }


# A three-turn run: list, then read + calculate (parallel, read-only), then answer.
THREE_TURNS: list[dict[str, Any]] = [
    {
        "content": "Let me look around.",
        "tool_calls": [{"id": "call_list", "name": "list_dir", "arguments": {"path": "."}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132},
    },
    {
        "tool_calls": [
            {"id": "call_read", "name": "read_file", "arguments": {"path": "config.toml"}},
            {"id": "call_calc", "name": "calculator", "arguments": {"expression": "8080 * 2"}},
        ],
    },
    {"content": "The port is 8080; twice that is 16160."},
]


def read_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_events(path: Path, events: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(event, separators=(",", ":")) + "\n" for event in events)
    path.write_text(text, encoding="utf-8")


async def cli(*argv: str) -> int:
    """Run the `workbench` command; in a thread, since it starts its own event loop."""
    import asyncio

    from workbench.cli import main

    return await asyncio.to_thread(main, list(argv))


def read_call(path: str, call_id: str) -> dict[str, Any]:
    """A scripted model step that reads `path` with `read_file`."""
    return {"tool_calls": [{"id": call_id, "name": "read_file", "arguments": {"path": path}}]}


def recorded_read_run(tmp_path: Path) -> tuple[Path, Path, str]:
    """A home holding one run, recorded by `workbench run`, whose tools read `project`: it
    reads a.txt, then answers. Returns the home, the project and the run's id."""
    from workbench.cli import main

    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("alpha\n")
    home = tmp_path / "home"
    script = tmp_path / "parent.json"
    script.write_text(json.dumps([read_call("a.txt", "call_a"), {"content": "alpha it is"}]))
    run = ["run", "What is in a.txt?", "--script", str(script), "--root", str(project)]
    assert main([*run, "--home", str(home)]) == 0
    [trace] = traces_dir(home).glob("*.jsonl")
    return home, project, trace.stem
