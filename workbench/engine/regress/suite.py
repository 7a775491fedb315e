"""Regression suite files: parse and validate the TOML, and append captured cases.

    [suite]
    name = "file-tools"
    samples = 3
    tools = "builtin"            # or "package.module:registry", or an MCP config path
    builtin_tools = ["read_file"]  # optional: only these built-ins ([] for none); with an
                                   # MCP config or a module, these built-ins are added to it

    [[case]]
    id = "read-notes"
    task = "What does notes.txt say?"      # or: from_run = "RUN_ID", turn = 2
    expect_tool = "read_file"
    min_pass_rate = 1.0

Parsing is pure: no model, no store. Every mistake in a file becomes one `SuiteError`
line naming the file and the case, so `workbench test` can exit 2 with it.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traces.user_files import read_text
from workbench.engine.recording.fork.tool_policy import PolicyError, PolicyRule, rules_from_table

SUITE_KEYS = {
    "name",
    "samples",
    "tools",
    "builtin_tools",
    "system_prompt",
    "max_tools",
    "min_pass_rate",
    "script",
}
CASE_KEYS = {
    "id",
    "task",
    "from_run",
    "turn",
    "system_prompt",
    "expect_tool",
    "expect_args",
    "expect_not_tool",
    "expect_sequence",
    "expect_no_tool",
    "expect_text",
    "min_pass_rate",
    "samples",
}
_CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class SuiteError(Exception):
    """The suite file cannot be used; the message is one line saying what to fix."""


@dataclass(frozen=True)
class Case:
    id: str
    task: str | None = None
    from_run: str | None = None
    turn: int | None = None
    system_prompt: str | None = None
    expect_tool: str | None = None
    expect_args: dict[str, Any] = field(default_factory=dict)
    expect_not_tool: str | None = None
    expect_sequence: tuple[str, ...] = ()
    # The first decision answers in text, calling no tool (a final answer).
    expect_no_tool: bool = False
    # The first decision's text contains this (case and runs of spaces aside).
    expect_text: str | None = None
    min_pass_rate: float = 1.0
    samples: int | None = None

    @property
    def turns_needed(self) -> int:
        """How many model decisions the case looks at (a sequence may span turns)."""
        return max(1, len(self.expect_sequence))

    def expected_text(self) -> str:
        parts: list[str] = []
        if self.expect_sequence:
            parts.append(" → ".join(self.expect_sequence))
        if self.expect_tool:
            args = ", ".join(f"{k}={json.dumps(v)}" for k, v in self.expect_args.items())
            parts.append(f"{self.expect_tool}({args})" if args else self.expect_tool)
        if self.expect_not_tool:
            parts.append(f"not {self.expect_not_tool}")
        if self.expect_no_tool:
            parts.append("no tool")
        if self.expect_text is not None:
            parts.append(f"text with {json.dumps(self.expect_text[:60], ensure_ascii=False)}")
        return "; ".join(parts)


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    cases: tuple[Case, ...]
    samples: int = 1
    tools: str | None = None
    system_prompt: str | None = None
    max_tools: int | None = None
    builtin_tools: tuple[str, ...] | None = None  # None: as `tools` says
    # A model script (docs/script-format.md) that answers when the command names no model:
    # a suite that runs offline as it is (the demo's).
    script: str | None = None
    # `[tool_policy]`: name or glob -> the side-effect policy of its calls in a sample.
    tool_policy: tuple[PolicyRule, ...] = ()

    def samples_for(self, case: Case, override: int | None = None) -> int:
        if override is not None:
            return override
        return case.samples if case.samples is not None else self.samples

    def script_path(self) -> Path | None:
        """`script` relative to the suite file, as `tools_path` takes an MCP config."""
        if self.script is None:
            return None
        candidate = Path(self.script)
        return candidate if candidate.is_absolute() else self.path.parent / candidate

    def tools_path(self) -> str | None:
        """`tools` as given, with an MCP config path made relative to the suite file."""
        if self.tools is None or self.tools == "builtin" or not self.tools.endswith(".json"):
            return self.tools
        candidate = Path(self.tools)
        if not candidate.is_absolute():
            candidate = self.path.parent / candidate
        return str(candidate)


def load_suite(path: str | Path) -> Suite:
    path = Path(path)
    try:
        text = read_text(path)
    except OSError as exc:
        raise SuiteError(f"cannot read suite {path}: {exc.strerror or exc}") from exc
    return parse_suite(text, path)


def parse_suite(text: str, path: Path) -> Suite:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SuiteError(f"{path}: not valid TOML: {exc}") from exc
    where = str(path)
    unknown_top = set(data) - {"suite", "case", "tool_policy"}
    if unknown_top:
        raise SuiteError(
            f"{where}: unknown section {sorted(unknown_top)[0]!r}; use [suite]/[[case]]"
        )
    policy_table = data.get("tool_policy", {})
    if not isinstance(policy_table, dict):
        raise SuiteError(f"{where}: [tool_policy] must be a table of name = policy")
    try:
        policy = tuple(rules_from_table(policy_table, f"{where} [tool_policy]"))
    except PolicyError as exc:
        raise SuiteError(str(exc)) from None
    head = data.get("suite", {})
    if not isinstance(head, dict):
        raise SuiteError(f"{where}: [suite] must be a table")
    _no_unknown(head, SUITE_KEYS, f"{where} [suite]")
    name = _opt_str(head, "name", f"{where} [suite]") or path.name.split(".")[0]
    samples = _opt_int(head, "samples", f"{where} [suite]", minimum=1) or 1
    default_rate = _opt_rate(head, f"{where} [suite]")
    raw_cases = data.get("case", [])
    if not isinstance(raw_cases, list) or not raw_cases:
        raise SuiteError(f"{where}: no cases; add at least one [[case]] with an id and a task")
    cases: list[Case] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_cases, start=1):
        case = _parse_case(raw, f"{where} case #{index}", default_rate)
        if case.id in seen:
            raise SuiteError(f"{where}: case id {case.id!r} appears twice; ids must be unique")
        seen.add(case.id)
        cases.append(case)
    return Suite(
        name=name,
        path=path,
        cases=tuple(cases),
        samples=samples,
        tools=_opt_str(head, "tools", f"{where} [suite]"),
        system_prompt=_opt_str(head, "system_prompt", f"{where} [suite]"),
        max_tools=_opt_int(head, "max_tools", f"{where} [suite]", minimum=1),
        builtin_tools=_opt_names(head, "builtin_tools", f"{where} [suite]"),
        script=_opt_str(head, "script", f"{where} [suite]"),
        tool_policy=policy,
    )


def _parse_case(raw: Any, where: str, default_rate: float | None) -> Case:
    if not isinstance(raw, dict):
        raise SuiteError(f"{where}: must be a table")
    case_id = raw.get("id")
    if not isinstance(case_id, str) or not _CASE_ID.match(case_id):
        raise SuiteError(f"{where}: needs an id of letters, digits, '-', '_' or '.'")
    where = f"{where} ({case_id})"
    _no_unknown(raw, CASE_KEYS, where)
    task = _opt_str(raw, "task", where)
    from_run = _opt_str(raw, "from_run", where)
    turn = _opt_int(raw, "turn", where, minimum=1)
    if (task is None) == (from_run is None):
        raise SuiteError(f'{where}: give either task = "..." or from_run = "RUN_ID", turn = N')
    if from_run is not None and turn is None:
        raise SuiteError(f"{where}: from_run needs turn = N (the turn whose decision to check)")
    if task is not None and turn is not None:
        raise SuiteError(f"{where}: turn only applies to from_run cases")
    expect_args = raw.get("expect_args", {})
    if not isinstance(expect_args, dict):
        raise SuiteError(f'{where}: expect_args must be a table, e.g. {{ path = "notes.txt" }}')
    sequence = raw.get("expect_sequence", [])
    if not isinstance(sequence, list) or not all(isinstance(s, str) and s for s in sequence):
        raise SuiteError(f"{where}: expect_sequence must be a list of tool names")
    expect_tool = _opt_str(raw, "expect_tool", where)
    expect_not_tool = _opt_str(raw, "expect_not_tool", where)
    if expect_args and not expect_tool:
        raise SuiteError(f"{where}: expect_args needs expect_tool (whose arguments to check)")
    expect_no_tool = raw.get("expect_no_tool", False)
    if not isinstance(expect_no_tool, bool):
        raise SuiteError(f"{where}: expect_no_tool must be true or false")
    if expect_no_tool and (expect_tool or sequence):
        raise SuiteError(f"{where}: expect_no_tool contradicts expect_tool and expect_sequence")
    expect_text = raw.get("expect_text")
    if expect_text is not None and (not isinstance(expect_text, str) or not expect_text.strip()):
        raise SuiteError(f"{where}: expect_text must be a non-empty string")
    if not (expect_tool or expect_not_tool or sequence or expect_no_tool or expect_text):
        raise SuiteError(
            f"{where}: no expectation; add expect_tool, expect_not_tool, expect_sequence, "
            "expect_no_tool or expect_text"
        )
    rate = _opt_rate(raw, where)
    return Case(
        id=case_id,
        task=task,
        from_run=from_run,
        turn=turn,
        system_prompt=_opt_str(raw, "system_prompt", where),
        expect_tool=expect_tool,
        expect_args=dict(expect_args),
        expect_not_tool=expect_not_tool,
        expect_sequence=tuple(sequence),
        expect_no_tool=expect_no_tool,
        expect_text=expect_text,
        min_pass_rate=rate
        if rate is not None
        else (default_rate if default_rate is not None else 1.0),
        samples=_opt_int(raw, "samples", where, minimum=1),
    )


def _no_unknown(table: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise SuiteError(
            f"{where}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(allowed))}"
        )


def _opt_str(table: dict[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise SuiteError(f"{where}: {key} must be a non-empty string")
    return value


def _opt_names(table: dict[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise SuiteError(f'{where}: {key} must be a list of names, e.g. ["read_file"]')
    return tuple(value)


def _opt_int(table: dict[str, Any], key: str, where: str, *, minimum: int) -> int | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SuiteError(f"{where}: {key} must be a whole number >= {minimum}")
    return value


def _opt_rate(table: dict[str, Any], where: str) -> float | None:
    value = table.get("min_pass_rate")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise SuiteError(f"{where}: min_pass_rate must be a number from 0 to 1")
    return float(value)


# ---- writing: capture-case appends a block; the rest of the file is left byte-for-byte.


def toml_string(value: str) -> str:
    """A TOML basic string. JSON's escapes are valid TOML except DEL and lone surrogates."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("nan" if value != value else "inf")
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    if value is None:
        return '""'  # TOML has no null; an empty string is the closest argument value
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else toml_string(key)


def case_to_toml(case: Case, comment: str | None = None) -> str:
    lines = ["", "[[case]]"]
    if comment:
        lines.extend(f"# {line}" for line in comment.splitlines())
    fields: list[tuple[str, Any]] = [("id", case.id)]
    if case.task is not None:
        fields.append(("task", case.task))
    if case.from_run is not None:
        fields += [("from_run", case.from_run), ("turn", case.turn)]
    if case.system_prompt is not None:
        fields.append(("system_prompt", case.system_prompt))
    if case.expect_tool:
        fields.append(("expect_tool", case.expect_tool))
    if case.expect_args:
        fields.append(("expect_args", case.expect_args))
    if case.expect_not_tool:
        fields.append(("expect_not_tool", case.expect_not_tool))
    if case.expect_sequence:
        fields.append(("expect_sequence", list(case.expect_sequence)))
    if case.expect_no_tool:
        fields.append(("expect_no_tool", True))
    if case.expect_text is not None:
        fields.append(("expect_text", case.expect_text))
    fields.append(("min_pass_rate", case.min_pass_rate))
    lines.extend(f"{key} = {_toml_value(value)}" for key, value in fields)
    return "\n".join(lines) + "\n"


def append_case(
    path: Path, case: Case, *, suite_name: str | None = None, comment: str | None = None
) -> None:
    """Append `case` to the suite at `path` (created if missing), refusing duplicate ids.

    The file is re-parsed with the case added before anything is written, so a bad
    append never leaves a broken suite behind.
    """
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    if not existing.strip():
        name = suite_name or path.name.split(".")[0]
        existing = f"[suite]\nname = {toml_string(name)}\nsamples = 3\n"
    if not existing.endswith("\n"):
        existing += "\n"
    updated = existing + case_to_toml(case, comment)
    suite = parse_suite(updated, path)  # raises on a duplicate id or a broken file
    assert suite.cases[-1].id == case.id
    path.parent.mkdir(parents=True, exist_ok=True)  # a new suite's folder (the TUI's default)
    path.write_text(updated, encoding="utf-8")
