"""Hooks around the model call and the tool call: observing, refusing, mocking, replacing."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

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


async def test_the_history_is_read_only_and_a_hook_changes_a_copy(project: Path) -> None:
    """Messages are frozen as they enter the history: a hook that edits one in place is
    refused in one line, and one that sends an edited copy reaches the model with it while
    the recorded history stays as the loop kept it."""
    sent: list[list[dict[str, object]]] = []
    refusals: list[str] = []

    async def shout(model_call: ModelCall, next_model: NextModel) -> AsyncIterator[StreamItem]:
        task = model_call.messages[0]
        try:
            task["content"] = "changed in place"  # type: ignore[index]
        except TypeError as exc:
            refusals.append(str(exc))
        loud = {**task, "content": str(task["content"]).upper()}
        louder = dataclasses.replace(model_call, messages=[loud, *model_call.messages[1:]])
        sent.append(louder.messages)
        async for item in next_model(louder):
            yield item

    outcome = await run_agent(
        [{"tool_calls": [call("calculator", expression="1 + 1")]}, {"content": "done"}],
        root=project,
        hooks=Hooks(model=[shout]),
    )
    assert outcome.result.status == "completed"
    assert len(refusals) == 2 and "read-only" in refusals[0] and "\n" not in refusals[0]
    assert [messages[0]["content"] for messages in sent] == ["DO THE TASK"] * 2
    first, second = outcome.of("model_request")
    assert first.messages[0]["content"] == second.messages[0]["content"] == "do the task"
    assert second.messages[: len(first.messages)] == first.messages
    for message in outcome.result.messages:
        with pytest.raises(TypeError):
            message.clear()
        copy = dict(message)
        copy["content"] = "editable"
