"""The message invariant, history trimming by atomic rounds, and the token estimate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_core.history import SUMMARY_PREFIX, split_rounds, trim_history
from agent_core.messages import MessageInvariantError, check_messages
from agent_core.tokens import estimate_text, estimate_tools
from tests.agent.scripted_run import call, run_agent
from traces.events import Limits


def assistant(text: str | None, *ids: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if ids:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": "t", "arguments": "{}"}} for i in ids
        ]
    return message


def tool(call_id: str, text: str = "result") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


HEAD = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]


def test_well_formed_history_passes() -> None:
    check_messages([*HEAD, assistant(None, "a", "b"), tool("b"), tool("a"), assistant("done")])


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([*HEAD, assistant(None, "a")], "without results: a"),
        ([*HEAD, assistant(None, "a"), tool("a"), tool("a")], "more than once"),
        ([*HEAD, tool("x")], "unknown or closed call x"),
        ([*HEAD, assistant(None, "a"), assistant("next"), tool("a")], "before the results"),
        ([*HEAD, assistant(None, "a"), tool("a"), assistant(None, "a"), tool("a")], "used twice"),
        ([*HEAD, assistant(None, "")], "no id"),
        ([{"role": "robot", "content": "?"}], "unknown role"),
    ],
)
def test_violations_are_named(messages: list[dict[str, Any]], problem: str) -> None:
    with pytest.raises(MessageInvariantError, match=problem):
        check_messages(messages)


async def test_model_ids_pass_through_and_every_call_is_answered_once(project: Path) -> None:
    outcome = await run_agent(
        [
            {
                "tool_calls": [
                    {"name": "list_dir", "arguments": {}, "id": "call_from_model_1"},
                    {"name": "nope", "arguments": {}, "id": "call_from_model_2"},
                ]
            },
            {"content": "done"},
        ],
        root=project,
    )
    last_request = outcome.of("model_request")[-1].messages
    check_messages(last_request)
    ids = [m["tool_call_id"] for m in last_request if m["role"] == "tool"]
    assert ids == ["call_from_model_1", "call_from_model_2"]


def test_rounds_keep_a_call_with_its_results() -> None:
    messages = [*HEAD, assistant("one", "a", "b"), tool("a"), tool("b"), assistant("two")]
    head, rounds = split_rounds(messages)
    assert head == HEAD
    assert rounds == [[assistant("one", "a", "b"), tool("a"), tool("b")], [assistant("two")]]


def test_trim_keeps_system_task_and_last_rounds_and_folds_text() -> None:
    messages = list(HEAD)
    for n in range(5):
        messages += [assistant(f"step {n}", f"c{n}"), tool(f"c{n}", "x" * 500)]
    trim = trim_history(messages, keep_rounds=2)
    assert trim is not None
    assert trim.messages[:2] == HEAD
    summary = trim.messages[2]
    assert summary["role"] == "assistant" and summary["content"].startswith(SUMMARY_PREFIX)
    assert "step 0" in summary["content"] and "step 2" in summary["content"]
    assert "x" * 50 not in summary["content"]  # tool details dropped
    assert trim.messages[3:] == messages[-4:]
    assert (trim.rounds_kept, trim.rounds_dropped) == (2, 3)
    assert trim.tokens_after < trim.tokens_before
    check_messages(trim.messages)


def test_nothing_to_trim_returns_none() -> None:
    assert trim_history([*HEAD, assistant("only")], keep_rounds=6) is None


async def test_the_loop_trims_at_70_percent_and_records_it(project: Path) -> None:
    (project / "big.txt").write_text("y" * 3_000)
    steps: list[dict[str, Any]] = [
        {
            "content": f"reading {n}",
            "tool_calls": [call("read_file", path="big.txt", start_line=1, max_lines=n + 1)],
        }
        for n in range(4)
    ]
    outcome = await run_agent(
        [*steps, {"content": "done"}],
        root=project,
        limits=Limits(context_window=4_000, keep_rounds=1),
    )
    assert outcome.result.status == "completed"
    trims = outcome.of("history_trimmed")
    assert trims and all(t.tokens_after < t.tokens_before for t in trims)
    for request in outcome.of("model_request"):
        check_messages(request.messages)  # every request still pairs calls and results
    last = outcome.of("model_request")[-1].messages
    assert last[0] == {"role": "user", "content": "do the task"}
    assert last[1]["content"].startswith(SUMMARY_PREFIX)


def test_token_estimate() -> None:
    assert estimate_text("") == 0
    assert estimate_text("abcd" * 100) == 100  # ~4 characters per token
    assert estimate_text("漢字" * 30) == 40  # ~1.5 characters per token for CJK
    tools = [{"type": "function", "function": {"name": "x", "description": "d" * 400}}]
    assert estimate_tools(tools) > 100
