"""smolagents' ToolCallingAgent through `workbench proxy`: it sends its tool calls back as
text (`Calling tools:\\n[…]`) and their results as user messages (`Observation:\\n…`), and
ends its run on a `final_answer` call it sends nothing back for. Its capture is one
completed run with the result linked to its call, replays offline through `serve-model`,
and forks at the observed result with a mock."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.engine.capture_support import assert_no_key_in, read_run, runs
from tests.engine.test_serve_model import serve
from tests.support.processes import WORKBENCH
from tests.support.servers import recording_proxy
from workbench.engine.http.model_server import ScriptResponder

pytestmark = [
    pytest.mark.frameworks,
    pytest.mark.skipif(
        importlib.util.find_spec("smolagents") is None,
        reason="smolagents is not installed (pip install -e '.[frameworks]')",
    ),
]

KEY = "sk-smolagents-test-0123456789abcdef"
TASK = "What is 8080 times two?"
USAGE = {"prompt_tokens": 900, "completion_tokens": 20, "total_tokens": 920}
STEPS: list[dict[str, Any]] = [
    {
        "content": "",
        "tool_calls": [
            {"id": "call_calc", "name": "calculator", "arguments": {"expression": "8080 * 2"}}
        ],
        "usage": USAGE,
    },
    {
        "content": "",
        "tool_calls": [
            {"id": "call_done", "name": "final_answer", "arguments": {"answer": "16160"}}
        ],
        "usage": USAGE,
    },
]


def smolagents_agent(base_url: str) -> str:
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    def calculator(expression: str) -> str:
        """Evaluate arithmetic.

        Args:
            expression: the product to work out, such as "8080 * 2".
        """
        left, _, right = expression.partition("*")
        return str(int(left) * int(right))

    model = OpenAIServerModel(model_id="demo-model", api_base=base_url, api_key=KEY)
    agent = ToolCallingAgent(tools=[tool(calculator)], model=model, max_steps=4, verbosity_level=0)
    return str(agent.run(TASK))


def test_a_smolagents_run_is_one_completed_run_that_replays_and_forks(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with recording_proxy(ScriptResponder(STEPS, model="demo-model"), home) as (upstream, proxy):
        assert smolagents_agent(proxy.base_url) == "16160"
        sent = upstream.requests
    # What it sends: the call as text, the result as a user message.
    said = [m["content"][0]["text"] for m in sent[1].body["messages"][-2:]]
    assert said[0].lstrip().startswith("Calling tools:\n[{'id': 'call_calc'")
    assert said[1] == "Observation:\n16160"

    assert len(runs(home)) == 1
    events = read_run(home)
    start, end = events[0], events[-1]
    assert (start["origin"], start["task"]) == ("captured", f"New task:\n{TASK}")
    assert (end["status"], end["final_answer"]) == ("completed", "16160")
    assert end["totals"]["turns"] == 2 and end["totals"]["tool_calls"] == 2
    starts = [(e["turn"], e["call_id"], e["name"]) for e in events if e["type"] == "tool_start"]
    assert starts == [(1, "call_calc", "calculator"), (2, "call_done", "final_answer")]
    ends = [e for e in events if e["type"] == "tool_end"]
    assert [(e["call_id"], e["ok"], e["observed"], e["result"]) for e in ends] == [
        ("call_calc", True, True, "16160"),
        ("call_done", True, True, "16160"),
    ]
    second = [e for e in events if e["type"] == "model_request"][1]
    # Read as a tool call and its result; the body as smolagents sent it.
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_calc",
        "content": "16160",
    }
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_calc"
    assert second["body"] == sent[1].body
    assert_no_key_in(home, KEY)

    with serve("--replay", start["run_id"], "--home", str(home)) as base_url:
        assert smolagents_agent(base_url) == "16160"

    script = tmp_path / "fork.json"
    script.write_text(json.dumps([{"content": "Then it is 99."}]))
    forked = subprocess.run(
        [
            WORKBENCH, "--home", str(home), "fork", start["run_id"], "--turn", "2",
            "--mock", "call_calc=99", "--script", str(script), "--no-builtin-tools",
        ],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert forked.returncode == 0, forked.stdout + forked.stderr
    [fork] = [e for e in runs(home) if e[0]["run_id"] != start["run_id"]]
    assert fork[0]["parent_run_id"] == start["run_id"] and fork[0]["fork_turn"] == 2
    [request] = [e for e in fork if e["type"] == "model_request"]
    assert request["messages"][-1] == {"role": "tool", "tool_call_id": "call_calc", "content": "99"}
    assert (fork[-1]["status"], fork[-1]["final_answer"]) == ("completed", "Then it is 99.")


def _fork(home: Path, tmp_path: Path, run_id: str, steps: Any, *argv: str) -> list[Any]:
    """The fork's events, after forking `run_id` with a model script of `steps`."""
    script = tmp_path / "fork.json"
    script.write_text(json.dumps(steps))
    forked = subprocess.run(
        [
            WORKBENCH, "--home", str(home), "fork", run_id, *argv, "--script", str(script),
            "--no-builtin-tools",
        ],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert forked.returncode == 0, forked.stdout + forked.stderr
    [fork] = [e for e in runs(home) if e[0]["run_id"] != run_id]
    return fork


def _captured(home: Path) -> str:
    with recording_proxy(ScriptResponder(STEPS, model="demo-model"), home) as (_, proxy):
        assert smolagents_agent(proxy.base_url) == "16160"
    return str(read_run(home)[0]["run_id"])


def _final(answer: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "final_answer", "arguments": {"answer": answer}}]}


def test_a_fork_of_a_smolagents_run_ends_at_a_new_final_answer(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run_id = _captured(home)
    fork = _fork(home, tmp_path, run_id, [_final("198")], "--turn", "2", "--mock", "call_calc=99")
    assert len([e for e in fork if e["type"] == "model_request"]) == 1
    [end] = [e for e in fork if e["type"] == "tool_end"]
    assert (end["name"], end["ok"], end["result"]) == ("final_answer", True, "198")
    assert (fork[-1]["status"], fork[-1]["final_answer"]) == ("completed", "198")


def test_a_fork_of_a_smolagents_run_that_answers_as_recorded_ends_there(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run_id = _captured(home)
    steps = [
        {"tool_calls": [{"name": "calculator", "arguments": {"expression": "8080 * 2"}}]},
        _final("16160"),
        {"content": "asked a third time"},
    ]
    fork = _fork(home, tmp_path, run_id, steps, "--turn", "1", "--system", "Be brief.")
    assert [e["turn"] for e in fork if e["type"] == "model_request"] == [1, 2]
    assert (fork[-1]["status"], fork[-1]["final_answer"]) == ("completed", "16160")
