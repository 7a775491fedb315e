"""Tools: built-ins confined to the root, the calculator, errors as results, the output cap,
concurrency only for read-only calls, the reasoning argument, relevance selection,
return-direct and per-run description overrides."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from agent_core.tools.builtin import builtin_tools
from agent_core.tools.loader import ToolLoadError, load_toolset
from agent_core.tools.registry import ToolRegistry
from tests.agent.scripted_run import call, run_agent
from traces.events import Limits


async def run_tool(root: Path, name: str, **arguments: object) -> tuple[bool, str]:
    result = await builtin_tools(root).call(name, dict(arguments), "call_1")
    return result.ok, result.text


# -- confinement -----------------------------------------------------------------------


async def test_read_file_reads_inside_the_root(project: Path) -> None:
    ok, text = await run_tool(project, "read_file", path="README.md")
    assert ok and text.startswith("1: # demo")


@pytest.mark.parametrize("path", ["../outside.txt", "src/../../outside.txt", ".."])
async def test_dot_dot_is_refused(project: Path, path: str) -> None:
    (project.parent / "outside.txt").write_text("secret")
    ok, text = await run_tool(project, "read_file", path=path)
    assert not ok and "'..'" in text and "secret" not in text


async def test_absolute_path_outside_is_refused(project: Path) -> None:
    outside = project.parent / "outside.txt"
    outside.write_text("secret")
    ok, text = await run_tool(project, "read_file", path=str(outside))
    assert not ok and "outside the root" in text
    ok, text = await run_tool(project, "read_file", path=str(project / "README.md"))
    assert ok  # an absolute path inside the root is fine


async def test_symlink_escape_is_refused(project: Path) -> None:
    outside = project.parent / "elsewhere"
    outside.mkdir()
    (outside / "secret.txt").write_text("the secret")
    os.symlink(outside, project / "link")
    os.symlink(outside / "secret.txt", project / "file_link.txt")
    for name, args in [
        ("read_file", {"path": "link/secret.txt"}),
        ("read_file", {"path": "file_link.txt"}),
        ("list_dir", {"path": "link"}),
    ]:
        ok, text = await run_tool(project, name, **args)
        assert not ok and "symlink" in text, (name, text)
    ok, text = await run_tool(project, "search_files", query="secret")
    assert ok and "the secret" not in text


async def test_file_tool_failures_say_what_to_do(project: Path) -> None:
    ok, text = await run_tool(project, "read_file", path="missing.md")
    assert not ok and "list_dir" in text
    ok, text = await run_tool(project, "read_file", path="src")
    assert not ok and "folder" in text
    (project / "blob.bin").write_bytes(b"\x00\x01\x02")
    ok, text = await run_tool(project, "read_file", path="blob.bin")
    assert not ok and "binary" in text
    ok, text = await run_tool(project, "search_files", query="(", regex=True)
    assert not ok and "regular expression" in text


async def test_list_and_search(project: Path) -> None:
    ok, text = await run_tool(project, "list_dir")
    assert ok and text.splitlines() == ["README.md  28", "src/"]
    ok, text = await run_tool(project, "search_files", query="todo")
    assert ok and text == "src/main.py:2: # TODO: greet by name"


# -- calculator ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "answer"),
    [
        ("17 * 23", "391"),
        ("(2 + 3) * 4 / 8", "2.5"),
        ("2 ** 10 - sqrt(16)", "1020"),
        ("-7 // 2", "-4"),
    ],
)
async def test_calculator_does_arithmetic(project: Path, expression: str, answer: str) -> None:
    assert await run_tool(project, "calculator", expression=expression) == (True, answer)


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('echo hi')",
        "open('/etc/passwd').read()",
        "x + 1",
        "(1).__class__",
        "[1, 2]",
        "'a' * 3",
        "lambda: 1",
        "9 ** 9 ** 9",
        "1 / 0",
    ],
)
async def test_calculator_refuses_everything_else(project: Path, expression: str) -> None:
    ok, text = await run_tool(project, "calculator", expression=expression)
    assert not ok and text.startswith("Error:") and "Traceback" not in text


# -- errors, validation, cap -----------------------------------------------------------


async def test_bad_arguments_become_a_short_result(project: Path) -> None:
    result = await builtin_tools(project).call("read_file", {"start_line": 0}, "c1")
    assert not result.ok and result.error == "bad_arguments"
    assert "path: Field required" in result.text and "start_line" in result.text


async def test_unparseable_json_is_repaired_once_else_the_model_is_asked_again(
    project: Path,
) -> None:
    outcome = await run_agent(
        [
            {"tool_calls": [{"name": "read_file", "arguments": '{"path": "README.md"'}]},
            {"tool_calls": [{"name": "read_file", "arguments": "path=README.md"}]},
            {"content": "ok", "when_last_tool_result_contains": "valid JSON"},
        ],
        root=project,
    )
    first, second = outcome.of("tool_end")
    assert first.ok  # the missing brace was repaired
    starts = outcome.of("tool_start")
    assert starts[1].arguments is None and starts[1].parse_error
    assert not second.ok and "valid JSON" in second.result
    assert outcome.result.status == "completed"


async def test_exceptions_and_unknown_tools_are_results(project: Path) -> None:
    tools = ToolRegistry()

    class Empty(BaseModel):
        pass

    @tools.tool(Empty, description="Always breaks.")
    def broken(args: Empty) -> str:
        raise RuntimeError("wires crossed\nsecond line")

    outcome = await run_agent(
        [{"tool_calls": [call("broken"), call("nope")]}, {"content": "sorry"}], [tools]
    )
    broken_end, unknown_end = outcome.of("tool_end")
    assert broken_end.result == "Error: broken failed: RuntimeError: wires crossed second line"
    assert "unknown tool 'nope'" in unknown_end.result and "broken" in unknown_end.result
    assert outcome.result.status == "completed"
    assert outcome.result.totals.tool_errors == 2


async def test_output_over_the_cap_is_truncated_with_a_note(project: Path) -> None:
    (project / "big.txt").write_text("x" * 5_000)
    outcome = await run_agent(
        [{"tool_calls": [call("read_file", path="big.txt")]}, {"content": "big"}],
        root=project,
        limits=Limits(max_result_chars=1_000),
    )
    end = outcome.of("tool_end")[0]
    assert end.truncated and len(end.result) < 1_200 and "[truncated:" in end.result
    tool_message = outcome.result.messages[2]
    assert tool_message["content"] == end.result


# -- concurrency -----------------------------------------------------------------------


def rendezvous_tools(read_only: bool) -> ToolRegistry:
    """`first` finishes only once `second` has started: possible only when they overlap."""
    tools = ToolRegistry()
    second_started = asyncio.Event()

    class Empty(BaseModel):
        pass

    @tools.tool(Empty, description="First step.", read_only=read_only)
    async def first(args: Empty) -> str:
        await second_started.wait()
        return "first done"

    @tools.tool(Empty, description="Second step.", read_only=read_only)
    async def second(args: Empty) -> str:
        second_started.set()
        return "second done"

    return tools


async def test_read_only_calls_run_concurrently() -> None:
    outcome = await run_agent(
        [{"tool_calls": [call("first"), call("second")]}, {"content": "both"}],
        [rendezvous_tools(read_only=True)],
        limits=Limits(tool_timeout_s=5),
    )
    tool_events = [
        (e.type, e.name) for e in outcome.events if e.type == "tool_start" or e.type == "tool_end"
    ]
    assert tool_events == [
        ("tool_start", "first"),
        ("tool_start", "second"),
        ("tool_end", "first"),
        ("tool_end", "second"),
    ]
    assert all(e.ok for e in outcome.of("tool_end"))


async def test_calls_run_serially_unless_all_are_read_only(project: Path) -> None:
    tools = ToolRegistry()

    class Empty(BaseModel):
        pass

    @tools.tool(Empty, description="Writes a note.")
    def write_note(args: Empty) -> str:
        return "written"

    outcome = await run_agent(
        [
            {"tool_calls": [call("list_dir"), call("write_note"), call("list_dir", path="src")]},
            {"content": "done"},
        ],
        [builtin_tools(project), tools],
    )
    kinds = [e.type for e in outcome.events if e.type.startswith("tool_")]
    assert kinds == ["tool_start", "tool_end"] * 3


# -- reasoning, selection, return_direct, overrides -----------------------------------


async def test_reasoning_is_logged_not_passed(project: Path) -> None:
    tools = ToolRegistry()

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")  # an extra `reasoning` would be refused
        city: str

    @tools.tool(Strict, description="Weather for a city.", read_only=True)
    def weather(args: Strict) -> str:
        return f"sunny in {args.city}"

    outcome = await run_agent(
        [
            {"tool_calls": [call("weather", city="Lisbon", reasoning="the user asked")]},
            {"content": "sunny"},
        ],
        [tools],
        offer_reasoning=True,
    )
    schema = outcome.of("run_start")[0].tools[0]["function"]["parameters"]
    assert "reasoning" in schema["properties"] and schema["required"] == ["city"]
    start = outcome.of("tool_start")[0]
    assert start.reasoning == "the user asked" and start.arguments == {"city": "Lisbon"}
    assert outcome.of("tool_end")[0].result == "sunny in Lisbon"


def many_tools() -> ToolRegistry:
    tools = ToolRegistry()

    class Empty(BaseModel):
        pass

    topics = [
        ("send_email", "Send an email message to a person."),
        ("weather_forecast", "Get the weather forecast for a city."),
        ("stock_price", "Look up a stock price by ticker."),
        ("translate_text", "Translate text into another language."),
        ("weather_alerts", "Severe weather alerts for a region."),
        ("create_invoice", "Create an invoice for a customer."),
        ("book_flight", "Book a flight between two airports."),
        ("play_music", "Play a song."),
        ("set_timer", "Set a kitchen timer."),
        ("convert_currency", "Convert an amount between currencies."),
        ("rain_radar", "Rain radar image and weather map for a city."),
        ("order_pizza", "Order a pizza."),
    ]
    for name, description in topics:
        tools.tool(Empty, name=name, description=description)(lambda args: "ok")
    return tools


async def test_at_most_max_tools_offered_and_the_relevant_ones() -> None:
    outcome = await run_agent(
        [{"content": "ok"}], [many_tools()], task="What is the weather forecast for Lisbon?"
    )
    offered = [tool["function"]["name"] for tool in outcome.of("run_start")[0].tools]
    assert len(offered) == 8
    assert {"weather_forecast", "weather_alerts", "rain_radar"} <= set(offered)
    request_tools = outcome.of("model_request")[0].tools
    assert [t["function"]["name"] for t in request_tools] == offered


async def test_a_tool_that_was_not_offered_is_not_run() -> None:
    outcome = await run_agent(
        [{"tool_calls": [call("order_pizza")]}, {"content": "no"}],
        [many_tools()],
        task="weather forecast",
        limits=Limits(max_tools=2),
    )
    end = outcome.of("tool_end")[0]
    assert not end.ok and "unknown tool" in end.result


def direct_tools() -> ToolRegistry:
    tools = ToolRegistry()

    class Answer(BaseModel):
        text: str

    @tools.tool(Answer, description="Give the final answer.", return_direct=True)
    def final_answer(args: Answer) -> str:
        return args.text

    @tools.tool(Answer, description="Echo.", read_only=True)
    def echo(args: Answer) -> str:
        return args.text

    return tools


async def test_return_direct_ends_the_run_when_every_call_is_return_direct() -> None:
    outcome = await run_agent(
        [{"tool_calls": [call("final_answer", text="42")]}, {"content": "unused"}],
        [direct_tools()],
    )
    assert outcome.result.status == "completed" and outcome.result.final_answer == "42"
    assert len(outcome.of("model_request")) == 1


async def test_return_direct_mixed_with_other_calls_continues() -> None:
    outcome = await run_agent(
        [
            {"tool_calls": [call("final_answer", text="42"), call("echo", text="x")]},
            {"content": "the answer is 42"},
        ],
        [direct_tools()],
    )
    assert outcome.result.final_answer == "the answer is 42"
    assert len(outcome.of("model_request")) == 2


async def test_description_overrides_change_what_is_offered(project: Path) -> None:
    outcome = await run_agent(
        [{"content": "ok"}],
        root=project,
        tool_descriptions={"calculator": "Do maths."},
    )
    tools = {t["function"]["name"]: t for t in outcome.of("run_start")[0].tools}
    assert tools["calculator"]["function"]["description"] == "Do maths."
    assert outcome.of("model_request")[0].tools == outcome.of("run_start")[0].tools


async def test_override_for_an_unknown_tool_is_a_clear_error(project: Path) -> None:
    outcome = await run_agent(
        [{"content": "ok"}], root=project, tool_descriptions={"calculater": "typo"}
    )
    assert outcome.result.status == "error"
    assert "no tool named 'calculater'" in outcome.result.reason


def test_user_toolsets_load_from_a_module(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "my_tools.py").write_text(
        "from pydantic import BaseModel\n"
        "from agent_core.tools.registry import ToolRegistry\n"
        "registry = ToolRegistry()\n"
        "class A(BaseModel):\n    n: int\n"
        "@registry.tool(A, description='Double n.')\n"
        "def double(args):\n    return str(args.n * 2)\n"
        "not_tools = 3\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    toolset = load_toolset("my_tools:registry")
    assert [spec.name for spec in toolset.specs()] == ["double"]
    assert toolset.specs()[0].source == "user"
    for bad in ["my_tools", "my_tools:missing", "my_tools:not_tools", "no_such_module:x"]:
        with pytest.raises(ToolLoadError, match="--tools"):
            load_toolset(bad)
