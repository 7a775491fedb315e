"""N runs of one task captured through `workbench proxy` from a real openai SDK client,
against a local scripted upstream that fails a known fraction of the time in known ways
(a wrong tool, a loop, an upstream error), then compared by `workbench compare`: the path
the passing runs share and each failing way as its own variant (issue 38, part 1)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import openai

from tests.engine.capture_support import API_KEY, SYSTEM, TASK, TOOLS, run_tool
from tests.support.processes import workbench_at
from tests.support.servers import completion, recording_proxy
from workbench.engine.http.model_server import Reply

RUNS = 10
# Run k of the ten does what WAYS says (the rest take the path): known fractions.
WAYS = {6: "wrong tool", 7: "wrong tool", 8: "loop", 9: "upstream error"}
CLIENT_TURNS = 4  # the client agent gives up after this many answers with tool calls


def _call(run: int, turn: int, name: str, arguments: dict[str, Any]) -> Reply:
    call = {
        "id": f"call_{run}_{turn}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return completion(message, "tool_calls", (50, 10), model="flaky-model")


class FlakyUpstream:
    """Reads a file, doubles the port, answers — except for the runs WAYS names. A run
    begins with a request holding no assistant message; runs come one after another."""

    def __init__(self) -> None:
        self.run = -1
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        turn = sum(m.get("role") == "assistant" for m in body["messages"])
        with self._lock:
            if turn == 0:
                self.run += 1
            run = self.run
        way = WAYS.get(run)
        if way == "wrong tool":
            return _call(run, turn, "search_files", {"pattern": "port"})
        if way == "loop":
            return _call(run, turn, "read_file", {"path": "config.toml"})
        if way == "upstream error" and turn == 1:
            return Reply(status=500, body={"error": {"message": "upstream overloaded"}})
        if turn == 0:
            return _call(run, turn, "read_file", {"path": "config.toml"})
        if turn == 1:
            return _call(run, turn, "calculator", {"expression": "8080 * 2"})
        answer = {"role": "assistant", "content": "The port is 8080; twice that is 16160."}
        return completion(answer, "stop", (60, 12), model="flaky-model")


def _agent(base_url: str) -> None:
    """The user's agent on the openai SDK: runs the tools it is asked for (an unknown one
    answers that it is unknown), gives up after CLIENT_TURNS, or at an error."""
    client = openai.OpenAI(
        base_url=base_url,
        api_key=API_KEY,
        max_retries=0,
        default_headers={"X-Workbench-Run": "flaky"},
    )
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    try:
        for _ in range(CLIENT_TURNS):
            answer = client.chat.completions.create(
                model="flaky-model", messages=messages, tools=TOOLS
            )
            message = answer.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return
            for call in message.tool_calls:
                name, arguments = call.function.name, call.function.arguments  # type: ignore[union-attr]
                known = name in ("read_file", "calculator")
                result = run_tool(name, arguments) if known else f"unknown tool {name}"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    except openai.APIStatusError:
        return  # the user's agent stops at an error; the proxy keeps the run
    finally:
        client.close()


def test_runs_captured_through_the_proxy_compare_to_the_known_variants(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with recording_proxy(FlakyUpstream(), home) as (_, proxy):
        for _ in range(RUNS):
            _agent(proxy.base_url)

    done = workbench_at(home, "compare", "--run-name", "flaky", "--json", "--examples", "10")

    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert (report["runs"], report["passed"], report["tasks"]) == (10, 6, 1)
    path = [(step["kind"], step["tool"], step["arguments"]) for step in report["path"]]
    assert path == [
        ("call", "read_file", '{"path":"config.toml"}'),
        ("call", "calculator", '{"expression":"8080 * 2"}'),
        ("answer", None, None),
        ("end", None, None),
    ]
    assert report["path"][2]["text"] == "The port is 8080; twice that is 16160."
    assert report["on_path"]["runs"] == 6 and report["on_path"]["failed"] == 0
    variants = [
        (v["departure"]["position"] + 1, v["departure"]["how"], v["runs"], v["failed"])
        for v in report["variants"]
    ]
    assert variants[0] == (1, "other_tool", 2, 2)  # the wrong tool: most runs first
    assert sorted(variants[1:]) == [(2, "error", 1, 1), (2, "other_tool", 1, 1)]
    wrong = report["variants"][0]["departure"]
    assert wrong["step"]["tool"] == "search_files"
    assert wrong["step"]["arguments"] == '{"pattern":"port"}'
    loop = next(v for v in report["variants"][1:] if v["departure"]["how"] == "other_tool")
    assert loop["departure"]["step"]["tool"] == "read_file"  # again, where the path doubled
    assert loop["says"] == (
        "1 run called `read_file` where the passing runs called `calculator`; 1 of them failed"
    )
    error = next(v for v in report["variants"] if v["departure"]["how"] == "error")
    assert "upstream overloaded" in error["departure"]["step"]["text"]
