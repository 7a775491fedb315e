"""Every way a run ends, through the public `Agent` API on a scripted model: the status,
the reason and the run_end event, and what the run produced so far."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agent_core.agent import Agent, AgentConfig, TextDelta
from agent_core.model.scripted import ScriptedModel
from agent_core.tools.registry import ToolRegistry
from tests.agent.scripted_run import call, run_agent
from traces.events import Limits, RunEnd
from traces.reader import read_trace
from traces.writer import JsonlWriter, MemorySink


class Nothing(BaseModel):
    pass


def blocking_tools(started: asyncio.Event) -> ToolRegistry:
    """A tool that never finishes on its own (it waits on an event nobody sets)."""
    tools = ToolRegistry()

    @tools.tool(Nothing, description="Wait for the station to answer.")
    async def wait_forever(args: Nothing) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    return tools


async def test_completed_streams_text_and_records_the_answer(project: Path) -> None:
    outcome = await run_agent(
        [
            {"content": "Looking.", "tool_calls": [call("read_file", path="README.md")]},
            {"content": "It is a tiny demo project."},
        ],
        root=project,
    )
    assert outcome.result.status == "completed"
    assert outcome.result.final_answer == "It is a tiny demo project."
    assert outcome.types[0] == "run_start" and outcome.types[-1] == "run_end"
    end = outcome.of("run_end")[0]
    assert end.status == "completed" and end.turn is None
    assert end.totals.turns == 2 and end.totals.tool_calls == 1 and end.totals.model_calls == 2
    assert [e.turn for e in outcome.of("model_request")] == [1, 2]
    text = "".join(item.text for item in outcome.streamed if isinstance(item, TextDelta))
    assert text == "Looking.It is a tiny demo project."
    # Every recorded event was also streamed, in the same order.
    streamed_events = [item for item in outcome.streamed if not isinstance(item, TextDelta)]
    assert [e.seq for e in streamed_events] == list(range(len(outcome.events)))
    tool_end = outcome.of("tool_end")[0]
    assert tool_end.ok and "tiny demo project" in tool_end.result


async def test_max_turns(project: Path) -> None:
    steps = [{"tool_calls": [call("list_dir", path=p)]} for p in (".", "src", ".")]
    outcome = await run_agent(steps, root=project, limits=Limits(max_turns=2))
    assert outcome.result.status == "max_turns"
    assert outcome.result.totals.turns == 2
    assert len(outcome.of("model_request")) == 2


async def test_duplicate_tool_calls_stop_before_running_again(project: Path) -> None:
    same = {"tool_calls": [call("search_files", query="TODO")]}
    outcome = await run_agent(
        [{"content": "Searching.", **same}, same, {"content": "unused"}], root=project
    )
    assert outcome.result.status == "duplicate_tool_calls"
    assert len(outcome.of("tool_start")) == 1  # the repeat was not executed
    assert outcome.result.final_answer == "Searching."  # the partial answer so far


async def test_same_tool_with_other_arguments_is_not_a_duplicate(project: Path) -> None:
    outcome = await run_agent(
        [
            {"tool_calls": [call("list_dir", path=".")]},
            {"tool_calls": [call("list_dir", path="src")]},
            {"content": "done"},
        ],
        root=project,
    )
    assert outcome.result.status == "completed"


async def test_token_budget_uses_provider_usage(project: Path) -> None:
    usage = {"prompt_tokens": 900, "completion_tokens": 200, "total_tokens": 1100}
    outcome = await run_agent(
        [{"tool_calls": [call("list_dir")], "usage": usage}, {"content": "unused"}],
        root=project,
        limits=Limits(token_budget=1000),
    )
    assert outcome.result.status == "token_budget"
    assert outcome.of("tool_start") == []  # calls in the answer that crossed it are not run
    assert outcome.result.totals.total_tokens == 1100
    assert "1100" in outcome.result.reason


async def test_token_budget_stops_before_sending_an_oversized_request(project: Path) -> None:
    outcome = await run_agent(
        [{"content": "unused"}], root=project, task="x" * 8_000, limits=Limits(token_budget=500)
    )
    assert outcome.result.status == "token_budget"
    assert outcome.of("model_request") == []
    assert outcome.result.totals.model_calls == 0


async def test_model_timeout(project: Path) -> None:
    outcome = await run_agent(
        [{"delay_ms": 20_000, "content": "late"}],
        root=project,
        limits=Limits(model_timeout_s=0.2),
    )
    assert outcome.result.status == "timeout"
    assert outcome.result.timeout_layer == "model"
    end = outcome.of("run_end")[0]
    assert end.timeout_layer == "model"
    assert any(e.where == "model" and e.kind == "timeout" for e in outcome.of("error"))


async def test_tool_timeout_is_a_result_then_ends_the_run(project: Path) -> None:
    started = asyncio.Event()
    outcome = await run_agent(
        [{"tool_calls": [call("wait_forever")]}, {"content": "unused"}],
        [blocking_tools(started)],
        limits=Limits(tool_timeout_s=0.2),
    )
    assert outcome.result.status == "timeout" and outcome.result.timeout_layer == "tool"
    tool_end = outcome.of("tool_end")[0]
    assert not tool_end.ok and tool_end.error == "timeout" and "timed out" in tool_end.result
    # The call is still answered in history, so the messages stay well formed.
    assert outcome.result.messages[-1]["role"] == "tool"


async def test_run_timeout(project: Path) -> None:
    started = asyncio.Event()
    outcome = await run_agent(
        [{"tool_calls": [call("wait_forever")]}],
        [blocking_tools(started)],
        limits=Limits(run_timeout_s=0.3, tool_timeout_s=30),
    )
    assert outcome.result.status == "timeout" and outcome.result.timeout_layer == "run"


async def test_model_error_after_retries_ends_with_error(project: Path) -> None:
    outcome = await run_agent([{"error": {"status": 401, "message": "bad key"}}], root=project)
    assert outcome.result.status == "error"
    assert "bad key" in outcome.result.reason
    errors = outcome.of("error")
    assert errors and errors[0].status_code == 401 and not errors[0].retriable


async def test_retriable_model_error_then_success(project: Path) -> None:
    outcome = await run_agent(
        [{"error": {"status": 503, "message": "busy"}}, {"content": "fine now"}], root=project
    )
    assert outcome.result.status == "completed"
    assert [e.attempt for e in outcome.of("model_request")] == [1, 2]


async def test_cancelling_the_task_writes_cancelled(tmp_path: Path) -> None:
    started = asyncio.Event()
    config = AgentConfig(task="wait")
    writer = JsonlWriter(tmp_path, config.run_id)
    model = ScriptedModel([{"content": "Waiting.", "tool_calls": [call("wait_forever")]}])
    agent = Agent(model, [blocking_tools(started)], config, sinks=[writer])
    task = asyncio.create_task(agent.run())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert agent.result is not None and agent.result.status == "cancelled"
    assert agent.result.final_answer == "Waiting."
    events = read_trace(writer.path).events
    assert isinstance(events[-1], RunEnd) and events[-1].status == "cancelled"


async def test_a_failing_sink_never_fails_the_run(project: Path, capsys) -> None:
    class Broken:
        def write(self, event: object) -> None:
            raise OSError("disk full")

        def close(self) -> None:
            pass

    memory = MemorySink()
    model = ScriptedModel([{"content": "ok"}])
    agent = Agent(model, [], AgentConfig(task="hi"), sinks=[Broken(), memory])  # type: ignore[list-item]
    result = await agent.run()
    assert result.status == "completed"
    assert memory.events[-1].type == "run_end"
    assert "disk full" in capsys.readouterr().err


async def test_broken_history_is_an_error_not_a_request() -> None:
    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "x", "arguments": "{}"}}
            ],
        },
    ]
    outcome = await run_agent([{"content": "unused"}], [], initial_messages=history)
    assert outcome.result.status == "error"
    assert outcome.of("model_request") == []
    error = outcome.of("error")[0]
    assert error.where == "history" and "call_1" in error.message


async def test_fork_history_and_turn_numbering_are_honoured(project: Path) -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "list the project"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "list_dir", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "README.md\nsrc/"},
    ]
    outcome = await run_agent(
        [{"content": "Two entries."}],
        root=project,
        system_prompt="be brief",
        task="list the project",
        initial_messages=history,
        start_turn=2,
        parent_run_id="parent",
        fork_turn=2,
    )
    assert outcome.result.status == "completed"
    request = outcome.of("model_request")[0]
    assert request.turn == 2
    # Nothing re-added; the recorded `"content": null` goes as "" (strict servers reject it).
    assert request.messages[2] == {**history[2], "content": ""}
    assert request.messages[:2] + request.messages[3:] == history[:2] + history[3:]
    start = outcome.of("run_start")[0]
    assert start.parent_run_id == "parent" and start.fork_turn == 2


async def test_same_answers_give_the_same_requests(project: Path) -> None:
    steps: list[dict[str, Any]] = [
        {"tool_calls": [call("list_dir"), call("read_file", path="README.md")]},
        {"content": "done"},
    ]
    first = await run_agent(steps, root=project)
    second = await run_agent(steps, root=project)
    assert [e.messages for e in first.of("model_request")] == [
        e.messages for e in second.of("model_request")
    ]
    assert first.types == second.types
