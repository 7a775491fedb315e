"""The demo's runs: each a task, the scripted model's answers, and the limits that make it
end the way it is meant to. The model is scripted — every answer below is written out
here, not produced by a language model — so the demo runs offline and always the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traces.events import Limits, RunStatus


@dataclass(frozen=True)
class Scenario:
    name: str
    expect: RunStatus
    task: str
    steps: list[dict[str, Any]]
    limits: dict[str, Any] = field(default_factory=dict)
    system_prompt: str = (
        "You are a careful assistant exploring a small software project with file tools. "
        "Use the tools to check facts before answering."
    )

    def run_limits(self) -> Limits:
        return Limits(**self.limits)


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


SCENARIOS: list[Scenario] = [
    Scenario(
        name="completed",
        expect="completed",
        task=(
            "What is the demo project about, and what is the mean of the calibration "
            "temperatures listed in its README?"
        ),
        steps=[
            {
                "content": "I'll look at the project folder and its README first.",
                "tool_calls": [_call("list_dir", path="."), _call("read_file", path="README.md")],
            },
            {
                "content": "The README lists three calibration temperatures; averaging them.",
                "tool_calls": [_call("calculator", expression="(21.5 + 23.0 + 19.25) / 3")],
            },
            {
                "content": (
                    "tiny-weather is a small weather-station logger: it samples sensors every "
                    "ten minutes, converts units and writes a daily summary. The mean "
                    "calibration temperature is 21.25 °C."
                )
            },
        ],
    ),
    Scenario(
        name="tool-error-recovered",
        expect="completed",
        task="Which function converts Fahrenheit to Celsius, and in which file is it?",
        steps=[
            {"tool_calls": [_call("read_file", path="src/unit.py")]},
            {
                "content": "That file does not exist; listing src/ to find the right name.",
                "tool_calls": [_call("list_dir", path="src")],
                "when_last_tool_result_contains": "no file",
            },
            {"tool_calls": [_call("read_file", path="src/units.py")]},
            {"content": "`fahrenheit_to_celsius` in src/units.py does the conversion."},
        ],
    ),
    Scenario(
        name="duplicate-call-loop",
        expect="duplicate_tool_calls",
        task="Find every TODO in the project.",
        steps=[
            {"tool_calls": [_call("search_files", query="TODO")]},
            {
                "content": "Let me search again to be sure.",
                "tool_calls": [_call("search_files", query="TODO")],
            },
            {"content": "(never reached: the loop stops the repeated call)"},
        ],
    ),
    Scenario(
        name="token-budget",
        expect="token_budget",
        task="Read the raw sensor data and report the highest humidity.",
        limits={"token_budget": 2_000},
        steps=[
            {"tool_calls": [_call("read_file", path="data/readings.csv", max_lines=1000)]},
            {"content": "(never reached: the next request would pass the token budget)"},
        ],
    ),
    Scenario(
        name="model-timeout",
        expect="timeout",
        task="Summarise the notes folder.",
        limits={"model_timeout_s": 0.5},
        steps=[
            # The scripted model waits 30 s before answering; the 0.5 s model limit wins.
            {"delay_ms": 30_000, "content": "(never reached: the model call times out)"},
        ],
    ),
    Scenario(
        name="max-turns",
        expect="max_turns",
        task="Walk through every folder of the project and describe each file.",
        limits={"max_turns": 3},
        steps=[
            {"tool_calls": [_call("list_dir", path=".")]},
            {"tool_calls": [_call("list_dir", path="src")]},
            {"tool_calls": [_call("list_dir", path="data")]},
            {"content": "(never reached: max_turns is 3)"},
        ],
    ),
]


# The model a fork of a demo run talks to: scripted too, so `f` in the TUI (or `workbench
# fork` on a demo run) completes offline. The first step whose condition matches the fork's
# last tool result answers; the plain steps at the end answer anything else.
FORK_STEPS: list[dict[str, Any]] = [
    {
        "when_last_tool_result_contains": "no file",
        "content": "That path does not exist; reading src/units.py instead.",
        "tool_calls": [_call("read_file", path="src/units.py")],
    },
    {
        "when_last_tool_result_contains": "def fahrenheit_to_celsius",
        "content": (
            "`fahrenheit_to_celsius` converts Fahrenheit to Celsius, going by what the tool "
            "returned: {last_tool_result}"
        ),
    },
    {
        "when_last_tool_result_contains": "TODO",
        "content": (
            "The TODOs are in the results above: read the real sensor (src/sensors.py), "
            "report the humidity range (src/report.py) and move the station off the roof "
            "(notes/todo.md)."
        ),
    },
    {
        "content": (
            "(scripted fork model) Going by the last tool result in the edited history "
            "({last_tool_result}), I answer without further tool calls."
        )
    },
    {"content": "(scripted fork model) Done."},
]
FORK_SCRIPT_NAME = "demo-fork-script.json"


def edit_steps() -> list[dict[str, Any]]:
    """Steps a fork takes when its system prompt or a tool's description was edited, so the
    comparison with the parent shows the edit changed the answer."""
    from agent_core.tools.builtin import builtin_tools

    descriptions = {spec.name: spec.description for spec in builtin_tools(Path(".")).specs()}
    return [
        {
            "when_system_prompt_is_not": Scenario.__dataclass_fields__["system_prompt"].default,
            "content": (
                "(scripted fork model) The system prompt was edited; following the new "
                "instructions, I answer from the history without further tool calls."
            ),
        },
        {
            "when_tool_description_is_not": descriptions,
            "content": (
                "(scripted fork model) A tool's description was edited; reading it again, I "
                "would use that tool differently, so I stop here and say so."
            ),
        },
    ]


def write_fork_script(folder: Path) -> Path:
    """Write the forks' model script (docs/script-format.md) into `folder`; return its path."""
    path = folder / FORK_SCRIPT_NAME
    folder.mkdir(parents=True, exist_ok=True)
    # An answer to the last tool result comes first; then an answer to an edit, before the
    # plain steps that answer anything else.
    conditional = [step for step in FORK_STEPS if any(key.startswith("when_") for key in step)]
    plain = [step for step in FORK_STEPS if step not in conditional]
    script = {"name": "scripted-demo-fork", "steps": [*conditional, *edit_steps(), *plain]}
    path.write_text(json.dumps(script, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
