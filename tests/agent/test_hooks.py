"""Hooks around the model call and the tool call: observing, refusing, mocking, replacing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from agent_core.agent import Hooks, ToolInvocation
from agent_core.model.base import ModelCall, StreamItem
from agent_core.model.scripted import ScriptedModel
from agent_core.tools.base import ToolResult
from tests.agent.scripted_run import call, run_agent

NextTool = Callable[[ToolInvocation], Awaitable[ToolResult]]
NextModel = Callable[[ModelCall], AsyncIterator[StreamItem]]


async def test_tool_hooks_wrap_each_call_outermost_first(project: Path) -> None:
    seen: list[str] = []

    async def audit(invocation: ToolInvocation, next_call: NextTool) -> ToolResult:
        seen.append(f"audit {invocation.name} turn {invocation.turn}")
        result = await next_call(invocation)
        seen.append(f"audit saw ok={result.ok}")
        return result

    async def guard(invocation: ToolInvocation, next_call: NextTool) -> ToolResult:
        seen.append("guard")
        if invocation.arguments.get("path") == "secret.txt":
            return ToolResult(False, "Error: not allowed to read secret.txt", "refused")
        return await next_call(invocation)

    async def mock(invocation: ToolInvocation, next_call: NextTool) -> ToolResult:
        if invocation.name == "calculator":
            return ToolResult(True, "42", mocked=True)
        return await next_call(invocation)

    outcome = await run_agent(
        [
            {
                "tool_calls": [
                    call("read_file", path="secret.txt"),
                    call("calculator", expression="6 * 7"),
                ]
            },
            {"content": "done"},
        ],
        root=project,
        hooks=Hooks(tool=[audit, guard, mock]),
    )
    refused, mocked = outcome.of("tool_end")
    assert not refused.ok and refused.error == "refused"
    assert mocked.ok and mocked.mocked and mocked.result == "42"
    assert seen[:3] == ["audit read_file turn 1", "guard", "audit saw ok=False"]


async def test_model_hooks_can_observe_and_replace_the_answer(project: Path) -> None:
    calls: list[int] = []
    stand_in = ScriptedModel([{"content": "from the stand-in model"}])

    async def observe(model_call: ModelCall, next_model: NextModel) -> AsyncIterator[StreamItem]:
        calls.append(len(model_call.messages))
        async for item in next_model(model_call):
            yield item

    def replace(model_call: ModelCall, next_model: NextModel) -> AsyncIterator[StreamItem]:
        return stand_in.stream(model_call)

    outcome = await run_agent(
        [{"content": "from the real model"}], root=project, hooks=Hooks(model=[observe, replace])
    )
    assert calls == [1]
    assert outcome.result.final_answer == "from the stand-in model"
    assert outcome.of("model_response")[0].message["content"] == "from the stand-in model"
    assert outcome.model.remaining  # the wrapped model was never asked
