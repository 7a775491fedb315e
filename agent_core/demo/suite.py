"""The demo's regression suite: cases against the demo's own runs (their recorded context
at a turn) and a scripted model that answers each sample the way a model reading the tool
descriptions would, so `workbench test <home>/demo-suite.wbsuite.toml` runs offline, and an
edit that takes the guidance out of `list_dir`'s description makes a case regress.

The script is scripted like the demo's runs: every answer is written out below.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SUITE_NAME = "demo-suite"
SUITE_FILE = "demo-suite.wbsuite.toml"
SCRIPT_FILE = "demo-suite-script.json"
BASELINE = "demo"
# Words of list_dir's description the script reads: while they are there, the scripted
# model lists a folder after a missing file; without them it guesses a path to read.
LIST_DIR_GUIDANCE = "find out what exists"


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


# Each sample meets the whole script (a scripted model starts afresh per sample); the first
# step whose conditions hold answers.
SUITE_STEPS: list[dict[str, Any]] = [
    {
        "when_last_tool_result_contains": "Calibration temperatures",
        "content": "Averaging the three calibration temperatures.",
        "tool_calls": [_call("calculator", expression="(21.5 + 23.0 + 19.25) / 3")],
    },
    {
        "when_last_tool_result_contains": "no file",
        "when_tool_description_contains": {"list_dir": LIST_DIR_GUIDANCE},
        "content": "That file does not exist; listing src/ to find the right name.",
        "tool_calls": [_call("list_dir", path="src")],
    },
    {
        # Nothing says to look before reading: the scripted model guesses another path.
        "when_last_tool_result_contains": "no file",
        "content": "Trying another file name.",
        "tool_calls": [_call("read_file", path="src/conversion.py")],
    },
    {
        "when_last_tool_result_contains": "notes/",
        "content": "Now the src folder.",
        "tool_calls": [_call("list_dir", path="src")],
    },
    {"content": "(scripted suite model) this request matches no case of the demo suite."},
]


def _cases(run_ids: dict[str, str]) -> list[dict[str, Any]]:
    """The cases, each the context of one demo run (by scenario name) at a turn."""
    return [
        {
            "id": "average-with-calculator",
            "from_run": run_ids["completed"],
            "turn": 2,
            "expect_tool": "calculator",
            "comment": "after reading the README, the mean is computed, not guessed",
        },
        {
            "id": "list-after-missing-file",
            "from_run": run_ids["tool-error-recovered"],
            "turn": 2,
            "expect_tool": "list_dir",
            "expect_args": 'path = "src"',
            "comment": "a missing file is followed by a look at what exists",
        },
        {
            "id": "walk-into-src",
            "from_run": run_ids["max-turns"],
            "turn": 2,
            "expect_tool": "list_dir",
            "comment": "after the top folder, the next folder is listed",
        },
    ]


def suite_text(run_ids: dict[str, str], samples: int = 3) -> str:
    lines = [
        "# The demo's regression suite (written by `workbench demo`): does the model still",
        "# choose the right tool at these turns of the demo's runs? Its model is the script",
        f"# {SCRIPT_FILE} beside it (scripted, offline) unless the command names one.",
        "#   workbench test demo-suite.wbsuite.toml",
        "#   workbench test demo-suite.wbsuite.toml --baseline demo \\",
        '#       --tool-description list_dir="List a folder\'s files."   (regresses)',
        "[suite]",
        f'name = "{SUITE_NAME}"',
        f"samples = {samples}",
        'tools = "builtin"',
        f'script = "{SCRIPT_FILE}"',
    ]
    for case in _cases(run_ids):
        lines += ["", f"# {case['comment']}", "[[case]]"]
        lines += [f'id = "{case["id"]}"', f'from_run = "{case["from_run"]}"']
        lines += [f"turn = {case['turn']}", f'expect_tool = "{case["expect_tool"]}"']
        if "expect_args" in case:
            lines.append(f"expect_args = {{ {case['expect_args']} }}")
    return "\n".join(lines) + "\n"


def write_suite(home: Path, run_ids: dict[str, str]) -> Path:
    """Write the suite and its script into `home`; return the suite's path. `run_ids` maps
    the demo's scenario names to the run ids just recorded."""
    script = {"name": "scripted-demo", "steps": SUITE_STEPS}
    (home / SCRIPT_FILE).write_text(
        json.dumps(script, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    path = home / SUITE_FILE
    path.write_text(suite_text(run_ids), encoding="utf-8")
    return path
