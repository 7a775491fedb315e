"""What the server's tools take: names, descriptions and JSON schemas a model can pick
from (`arguments` checks a call's arguments against them).

The descriptions follow `workbench lint-tools` (say when to use a tool and when not; every
parameter described; closed sets as enums): a test holds them to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from traces.origins import RUN_KINDS
from traces.statuses import RUN_STATUSES

MAX_PAGE = 100  # runs, matches or events in one answer
MAX_TURNS_PAGE = 10


class ToolError(Exception):
    """A call the server cannot answer (bad argument, unknown run, refused): one line."""


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool = True

    def schema(self) -> dict[str, Any]:
        """The tool as MCP lists it (the shape `lint-tools` reads too)."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


def _run(what: str = "the run") -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "description": f"id of {what}, or a unique prefix of it (as list_runs shows)",
    }


def _page(default: int, maximum: int, what: str) -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": 1,
        "maximum": maximum,
        "default": default,
        "description": f"at most this many {what} in the answer",
    }


_OFFSET = {
    "type": "integer",
    "minimum": 0,
    "default": 0,
    "description": "how many to skip; pass the next_offset of the previous answer",
}

TOOLS: tuple[ToolDef, ...] = (
    ToolDef(
        "list_runs",
        "List recorded agent runs, newest first, with status, kind, model, turns, tool calls "
        "and tokens. Use it to find a run id or the runs that failed; filter by status, kind, "
        "model or task text and page with offset. Not for text inside a run's messages or "
        "tool results: use search_runs for that.",
        _object(
            {
                "status": {
                    "type": "string",
                    "enum": list(RUN_STATUSES),
                    "description": "only runs that ended with this status",
                },
                "failed": {
                    "type": "boolean",
                    "default": False,
                    "description": (
                        "only runs that did not complete; regression samples only with "
                        "samples or kind regression_sample, and never a sample that passed "
                        "its case"
                    ),
                },
                "samples": {
                    "type": "boolean",
                    "default": False,
                    "description": (
                        "list regression samples too (folded under their suite runs by "
                        "default: samples_folded counts them; kind regression_sample lists "
                        "only them); a sample's case says what its suite case judged"
                    ),
                },
                "kind": {
                    "type": "string",
                    "enum": list(RUN_KINDS),
                    "description": "only runs of this kind (agent is a `workbench run`)",
                },
                "model": {
                    "type": "string",
                    "description": "only runs whose model name contains this text",
                },
                "text": {
                    "type": "string",
                    "description": "only runs whose task contains this text",
                },
                "session": {
                    "type": "string",
                    "description": (
                        "only the runs of this session (a run's session, as list_runs shows "
                        "it), in the order they ran"
                    ),
                },
                "signature": {
                    "type": "string",
                    "pattern": "^[0-9a-fA-F]{1,8}$",
                    "description": "only the failed runs of one failure group (list_failures)",
                },
                "limit": _page(20, MAX_PAGE, "runs"),
                "offset": _OFFSET,
            }
        ),
    ),
    ToolDef(
        "list_failures",
        "Group the runs that did not complete by failure signature: status and reason, the "
        "first failing step's tool and error text with numbers, ids, paths and quoted values "
        "masked, and the tools called before it. Each group gives its run count, first and "
        "last seen, runs per day, example runs, models, and what changed in model, system "
        "prompt or tools since the run of its task before its first. Use it to see which "
        "ways runs fail most; offline, no model. Not for one run: use show_run.",
        _object(
            {
                "since_days": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "only runs started in the last this many days",
                },
                "limit": _page(10, MAX_PAGE, "groups, the biggest"),
                "examples": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "default": 3,
                    "description": "example run ids per group, the newest",
                },
            }
        ),
    ),
    ToolDef(
        "explain_failure",
        "Why a failed run failed: candidate causes read from its events and the runs of its "
        "task (where it left the passing runs' path, a tool error it acted on, its first "
        "error, a tool description or system prompt unlike the last passing run's, a "
        "repeated call, a limit), each citing events by seq, turn and call id, ranked by a "
        "counterfactual fork per fix (samples times) that flips the outcome or not. Forks "
        "write new runs: on a read-only server only the candidates come back. Not for "
        "groups of failures: use list_failures.",
        _object(
            {
                "run": _run("the failed run"),
                "samples": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 10,
                    "default": 3,
                    "description": "forks per fix",
                },
            },
            ("run",),
        ),
    ),
    ToolDef(
        "show_run",
        "Show one run's decision chain: per turn what the model said, the tool calls with "
        "their arguments and results, errors, and why the run stopped. Use it to debug a "
        "run; long runs come in pages of turns (turn_from). Pass events_from instead for "
        "the raw events by position. Do not use it to compare runs: use diff_runs.",
        _object(
            {
                "run": _run(),
                "turn_from": {
                    "type": "integer",
                    "minimum": 1,
                    "default": 1,
                    "description": "first turn to show; pass next_turn of the previous answer",
                },
                "turns": _page(3, MAX_TURNS_PAGE, "turns"),
                "events_from": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "when given: the run's raw events from this seq instead "
                    "of the chain",
                },
                "events": _page(20, MAX_PAGE, "raw events (with events_from)"),
            },
            ("run",),
        ),
    ),
    ToolDef(
        "search_runs",
        "Find where a text occurs in recorded runs (ignoring case): in tasks, what the model "
        "said, tool names, arguments and results, errors and final answers. Use it to find the "
        "runs and turns that mention an error or a file; newest runs first. Not for listing "
        "runs by status: use list_runs.",
        _object(
            {
                "text": {"type": "string", "minLength": 1, "description": "the text to find"},
                "run": _run("a run to search only in"),
                "limit": _page(20, MAX_PAGE, "matches"),
                "offset": _OFFSET,
            },
            ("text",),
        ),
    ),
    ToolDef(
        "diff_runs",
        "Compare two runs, typically a fork with its parent: the decision chains turn by "
        "turn (first divergence, changed texts and tool calls) and the tool schemas offered. "
        "Use it to see what an edit changed. Not for one run alone: use show_run.",
        _object(
            {
                "run_a": _run("the first run"),
                "run_b": _run("the second run"),
                "what": {
                    "type": "string",
                    "enum": ["both", "chain", "tools"],
                    "default": "both",
                    "description": "compare the decision chains, the tool schemas, or both",
                },
            },
            ("run_a", "run_b"),
        ),
    ),
    ToolDef(
        "compare_runs",
        "Compare N runs of one task (2 to thousands): the path the passing runs share, step "
        "by step, and for each run that left it the first step where it did (another tool, "
        "other arguments, a tool error, another answer, a limit), runs that left the same "
        "way grouped as one variant with word diffs against the path. Name the runs one "
        "way: run ids, task (every run of that run's task), case, label or run_name. Use "
        "it to see why some runs of a task fail. Not for two runs turn by turn: use "
        "diff_runs.",
        _object(
            {
                "runs": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "maxItems": 1000,
                    "description": "ids of the runs, or unique prefixes (as list_runs shows)",
                },
                "task": _run(
                    "a run whose task's runs to compare (same system prompt, task, tools)"
                ),
                "case": {
                    "type": "string",
                    "minLength": 1,
                    "description": "SUITE:CASE: the samples of a suite case in its newest run",
                },
                "label": {
                    "type": "string",
                    "minLength": 1,
                    "description": "compare the runs annotated with this label",
                },
                "run_name": {
                    "type": "string",
                    "minLength": 1,
                    "description": "compare the runs a proxy captured under X-Workbench-Run",
                },
                "variants": _page(10, 50, "variants, those with most runs"),
                "examples": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "default": 5,
                    "description": "run ids per variant, the oldest",
                },
            }
        ),
    ),
    ToolDef(
        "replay_run",
        "Re-execute a recorded run offline from its recording (no network, no tool side "
        "effects) and check that the decision chain is identical; when it is not, say the "
        "first divergence. Use it to verify that a run is deterministic after a code change. "
        "Writes nothing; not a way to change a run: use fork_run.",
        _object({"run": _run()}, ("run",)),
    ),
    ToolDef(
        "fork_run",
        "Re-run a recorded run from a turn with edits (system prompt, task, a tool's "
        "description or schema, mocked tool results) as a new linked run. Use it to test a "
        "fix; tools with side effects are refused unless allowed. Writes a new run, so only "
        "when the server allows writes; dry_run only checks the edits and shows the plan.",
        _object(
            {
                "run": _run("the run to fork"),
                "turn": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "the turn to fork at (1-based), as show_run numbers them",
                },
                "system": {"type": "string", "description": "a new system prompt"},
                "user": {
                    "type": "string",
                    "description": "new text for the last user message (the task)",
                },
                "tool_descriptions": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "tool name to its new description",
                },
                "tool_schemas": {
                    "type": "object",
                    "additionalProperties": {"type": "object"},
                    "description": "tool name to its new JSON parameter schema",
                },
                "mocks": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "recorded tool call id to the result the fork reads instead",
                },
                "allow_side_effects": {
                    "type": "boolean",
                    "default": False,
                    "description": "let new calls to tools that are not read-only run for real",
                },
                "dry_run": {
                    "type": "boolean",
                    "default": False,
                    "description": "check the edits and show the plan without running",
                },
            },
            ("run", "turn"),
        ),
        read_only=False,
    ),
    ToolDef(
        "run_suite",
        "Run a regression suite (a .wbsuite.toml file in the workbench home) as `workbench "
        "test` does: each case's samples run the agent, and the answer gives every case's "
        "pass rate, against a saved baseline when one is named, with why cases failed. Use "
        "it after editing a tool description to check the model still picks the right tool. "
        "It records each sample as a run, so the server must allow writes; not for reading "
        "recorded runs (use list_runs or show_run).",
        _object(
            {
                "suite": {
                    "type": "string",
                    "minLength": 1,
                    "description": "the suite file, relative to the workbench home",
                },
                "samples": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "description": "samples per case, instead of the suite's own number",
                },
                "baseline": {
                    "type": "string",
                    "minLength": 1,
                    "description": "a saved baseline's name to compare pass rates with",
                },
                "script": {
                    "type": "string",
                    "minLength": 1,
                    "description": "a model script in the home to answer instead of the "
                    "model the server's environment names (offline)",
                },
            },
            ("suite",),
        ),
        read_only=False,
    ),
    ToolDef(
        "annotate_run",
        "Annotate a recorded run, one of its turns or one tool call with labels, named "
        "scores and a note, as `workbench note` does (appended to the home's annotation "
        "files under the author's name), or remove an annotation (a tombstone). Use it to "
        "record a verdict on a run you debugged; show_run lists a run's annotations. Writes, "
        "so only when the server allows writes; not a way to change the run itself.",
        _object(
            {
                "run": _run(),
                "turn": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "the turn it is on (1-based, as show_run numbers them)",
                },
                "call_id": {
                    "type": "string",
                    "minLength": 1,
                    "description": "the tool call of that turn it is on (a call_id of show_run)",
                },
                "labels": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "maxItems": 20,
                    "description": "labels, e.g. loop or wrong-tool",
                },
                "scores": {
                    "type": "object",
                    "additionalProperties": {"type": "number"},
                    "description": 'score name to a number, e.g. {"helpful": 0.5}',
                },
                "text": {"type": "string", "description": "the note's text"},
                "author": {
                    "type": "string",
                    "minLength": 1,
                    "description": "who writes it (default: the server's $WORKBENCH_AUTHOR, "
                    "else git's user.name)",
                },
                "remove": {
                    "type": "string",
                    "minLength": 1,
                    "description": "the id of an annotation on the run to remove instead",
                },
            },
            ("run",),
        ),
        read_only=False,
    ),
    ToolDef(
        "check_rules",
        "Check a rules file of the home as `workbench check` does: each rule's figure over "
        "the store (a failure rate, p95 latency, cost per run or a label's count in a "
        "window, failure signatures new since the last `workbench check`) and whether it "
        "crossed its threshold. Use it to see whether runs got worse. Writes nothing (no "
        "webhook, the last check's time kept as it is); not for one run: use show_run.",
        _object(
            {
                "rules": {
                    "type": "string",
                    "minLength": 1,
                    "description": "the rules file (TOML), relative to the workbench home",
                },
            },
            ("rules",),
        ),
    ),
    ToolDef(
        "judge_runs",
        "Score runs with an LLM judge against a rubric file of the home, as `workbench "
        "judge` does: the final answer, each turn or each tool call, as the rubric says. "
        "Scores become annotations by judge:<rubric>; each judge call is a recorded run; "
        "items judged by the same rubric version are skipped; max_cost stops before the "
        "call that would pass it. Name the runs one way: runs, or since_days. Writes, so "
        "only when the server allows writes; not for reading scores (use show_run).",
        _object(
            {
                "rubric": {
                    "type": "string",
                    "minLength": 1,
                    "description": "the rubric file (TOML), relative to the workbench home",
                },
                "runs": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "maxItems": 1000,
                    "description": "ids of the runs to judge, or unique prefixes",
                },
                "since_days": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "judge the runs started in the last this many days",
                },
                "sample": {
                    "type": "number",
                    "description": "judge this share of the runs, from 0 to 1 (e.g. 0.1)",
                },
                "seed": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "which sample is drawn: the same seed, the same runs",
                },
                "max_cost": {
                    "type": "number",
                    "description": "the most judging may spend (needs the judge model's "
                    "price in the home's prices.toml)",
                },
                "script": {
                    "type": "string",
                    "minLength": 1,
                    "description": "a model script in the home to judge with instead of the "
                    "model the server's environment names (offline)",
                },
            },
            ("rubric",),
        ),
        read_only=False,
    ),
    ToolDef(
        "lint_tools",
        "Lint tool schemas for the mistakes that make a model pick the wrong tool (missing "
        "or near-identical descriptions, undescribed parameters, bad names, no enum). Use it "
        "on the tools a recorded run offered, or on schemas you pass. It does not call a "
        "model; not for checking a run's behaviour.",
        _object(
            {
                "run": _run("a run whose offered tools to lint"),
                "tools": {
                    "type": "array",
                    "items": {"type": "object"},
                    "maxItems": 200,
                    "description": "tool schemas to lint (OpenAI, bare or MCP shape) instead "
                    "of a run's",
                },
                "max_tools": {
                    "type": "integer",
                    "minimum": 1,
                    "default": 8,
                    "description": "warn when more tools than this are offered at once",
                },
            }
        ),
    ),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}
