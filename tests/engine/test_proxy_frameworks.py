"""Agent frameworks recorded through `workbench proxy`, then replayed offline.

Each framework runs a tool-using agent (read_file + calculator, called in parallel) against
the local scripted model through the proxy; the capture must show its tool calls as observed,
end `completed`, and then serve the same agent offline through `workbench serve-model` to
the same final answer. The frameworks are the optional `frameworks` extra (scripts/test.sh
installs it); without them these tests are skipped with the reason.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.engine.capture_support import (
    API_KEY,
    FILES,
    STEPS,
    SYSTEM,
    TASK,
    assert_no_key_in,
    read_run,
    run_tool,
)
from tests.engine.test_serve_model import serve
from tests.support.servers import recording_proxy
from workbench.engine.http.model_server import ScriptResponder

pytestmark = pytest.mark.frameworks


def needs(module: str) -> pytest.MarkDecorator:
    missing = importlib.util.find_spec(module) is None
    reason = f"{module} is not installed (pip install -e '.[frameworks]')"
    return pytest.mark.skipif(missing, reason=reason)


def read_file(path: str) -> str:
    """Read a text file."""
    return FILES.get(path, "no such file")


def calculator(expression: str) -> str:
    """Evaluate arithmetic."""
    return run_tool("calculator", f'{{"expression": "{expression}"}}')


def pydantic_ai_agent(base_url: str) -> str:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=base_url, api_key=API_KEY)
    agent = Agent(OpenAIChatModel("demo-model", provider=provider), system_prompt=SYSTEM)
    agent.tool_plain(read_file)
    agent.tool_plain(calculator)
    return str(agent.run_sync(TASK).output)


def openai_agents_agent(base_url: str, *, responses: bool = False) -> str:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_default_openai_api,
        set_default_openai_client,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # its tracing would export to the network
    client = AsyncOpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
    tools: list[Any] = [function_tool(read_file), function_tool(calculator)]
    if responses:
        # The SDK's default: no model named, its default client, the Responses API.
        set_default_openai_client(client, use_for_tracing=False)
        set_default_openai_api("responses")
        agent = Agent(name="assistant", instructions=SYSTEM, tools=tools)
    else:
        model = OpenAIChatCompletionsModel(model="demo-model", openai_client=client)
        agent = Agent(name="assistant", instructions=SYSTEM, tools=tools, model=model)
    return str(Runner.run_sync(agent, TASK).final_output)


def openai_agents_responses_agent(base_url: str) -> str:
    return openai_agents_agent(base_url, responses=True)


def langchain_agent(base_url: str) -> str:
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    tools = {t.name: t for t in (tool(read_file), tool(calculator))}
    llm = ChatOpenAI(
        model="demo-model", base_url=base_url, api_key=SecretStr(API_KEY), max_retries=0
    )
    chat = llm.bind_tools(list(tools.values()))
    messages: list[Any] = [SystemMessage(SYSTEM), HumanMessage(TASK)]
    for _ in range(5):
        answer = chat.invoke(messages)
        messages.append(answer)
        if not answer.tool_calls:
            return str(answer.content)
        for call in answer.tool_calls:
            result = tools[call["name"]].invoke(call["args"])
            messages.append(ToolMessage(content=str(result), tool_call_id=call["id"]))
    raise AssertionError("the agent did not finish")


FRAMEWORKS: dict[str, tuple[str, Callable[[str], str]]] = {
    "pydantic-ai": ("pydantic_ai", pydantic_ai_agent),
    "openai-agents": ("agents", openai_agents_agent),
    "openai-agents-responses": ("agents", openai_agents_responses_agent),
    "langchain-openai": ("langchain_openai", langchain_agent),
}


@pytest.mark.parametrize(
    "framework",
    [pytest.param(name, marks=needs(module)) for name, (module, _) in FRAMEWORKS.items()],
)
def test_a_framework_run_is_captured_and_replays_offline(tmp_path: Path, framework: str) -> None:
    agent = FRAMEWORKS[framework][1]
    home = tmp_path / "home"
    with recording_proxy(ScriptResponder(STEPS, model="demo-model"), home) as (_, proxy):
        answer = agent(proxy.base_url)
    assert answer == STEPS[1]["content"]

    events = read_run(home)
    start, end = events[0], events[-1]
    assert start["origin"] == "captured" and start["task"] == TASK
    if framework == "openai-agents-responses":  # no model named: the SDK's default one
        from agents.models import get_default_model

        assert start["model"] == get_default_model()
    assert {t["function"]["name"] for t in start["tools"]} == {"read_file", "calculator"}
    assert end["status"] == "completed" and end["final_answer"] == answer
    apis = {e["api"] for e in events if e["type"] == "model_request"}
    assert apis == {"responses" if framework.endswith("-responses") else "chat"}
    ends = [e for e in events if e["type"] == "tool_end"]
    assert [(e["call_id"], e["ok"], e["observed"]) for e in ends] == [
        ("call_read", True, True),
        ("call_calc", True, True),
    ]
    assert "8080" in ends[0]["result"] and ends[1]["result"] == "16160"
    assert_no_key_in(home, API_KEY)

    with serve("--replay", start["run_id"], "--home", str(home)) as base_url:
        assert agent(base_url) == answer
