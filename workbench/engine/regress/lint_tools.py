"""A model-free lint of tool schemas: the mistakes that make a model pick the wrong tool.

Input is a list of tool schemas in any of the shapes the workbench meets: OpenAI
(`{"type": "function", "function": {...}}`), bare (`{"name", "description",
"parameters"}`) or MCP (`{"name", "description", "inputSchema"}`). Errors are things a
model cannot work around (no description, an undescribed parameter, two tools it cannot
tell apart); warnings are habits that cost accuracy or tokens.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from difflib import SequenceMatcher
from typing import Any, Literal

Severity = Literal["error", "warning"]

MAX_TOOLS = 8  # the agent offers at most this many per request by default
MAX_NAME_LEN = 40
MIN_DESCRIPTION_WORDS = 4
MAX_DESCRIPTION_CHARS = 1024
NEAR_IDENTICAL = 0.85  # word-sequence similarity at which two descriptions blur together
# How many of a description's words are compared with the others': past MAX_DESCRIPTION_CHARS
# (about 170 words) a description is a finding already, and comparing all of two 50 KB
# descriptions word by word takes most of a minute.
COMPARED_WORDS = 200

_OPENAI_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
# Names that will change soon: versions, dates, "new"/"old"/"tmp" markers.
_UNSTABLE_NAME = re.compile(r"(^|_)(v\d+|new|old|tmp|temp|test|draft|legacy|\d{4,})($|_)")
_WHEN_TO_USE = re.compile(r"\b(use|when|if|for|whenever|to (?:find|get|read|list|look))\b", re.I)
_WHEN_NOT = re.compile(
    r"\b(not|don't|do not|never|instead|only|avoid|rather than|except|unless)\b", re.I
)
# Descriptions that enumerate a closed set of values: "one of", "either a or b", quoted lists.
_CLOSED_VALUES = re.compile(
    r"\bone of\b|\beither\b|\ballowed values\b|\bpossible values\b|"
    r"(['\"`])\w+\1\s*(,|or|/|\|)\s*(['\"`])\w+\3",
    re.I,
)
_CLOSED_NAMES = {"mode", "kind", "type", "format", "order", "sort", "direction", "unit", "level"}


@dataclass(frozen=True)
class Finding:
    severity: Severity
    tool: str | None  # None for findings about the whole set
    code: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        where = f"{self.tool}: " if self.tool else ""
        return f"{self.severity:7} {where}{self.message} [{self.code}]"


@dataclass(frozen=True)
class ToolShape:
    name: str
    description: str
    parameters: dict[str, Any]


def normalise(schema: dict[str, Any]) -> ToolShape:
    """Any supported schema shape as (name, description, parameters)."""
    body = schema.get("function", schema) if schema.get("type") == "function" else schema
    params = body.get("parameters", body.get("inputSchema", body.get("input_schema")))
    return ToolShape(
        name=str(body.get("name") or ""),
        description=str(body.get("description") or ""),
        parameters=params if isinstance(params, dict) else {},
    )


def lint_tools(schemas: list[dict[str, Any]], *, max_tools: int = MAX_TOOLS) -> list[Finding]:
    tools = [normalise(schema) for schema in schemas]
    findings: list[Finding] = []
    if len(tools) > max_tools:
        findings.append(
            Finding(
                "warning",
                None,
                "too-many-tools",
                f"{len(tools)} tools offered at once (more than {max_tools}); the agent will "
                "select a subset per request, and models choose worse from long lists",
            )
        )
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            findings.append(Finding("error", tool.name, "duplicate-name", "name used twice"))
        seen.add(tool.name)
        findings.extend(_lint_name(tool.name))
        findings.extend(_lint_description(tool))
        findings.extend(_lint_parameters(tool))
    findings.extend(_near_identical(tools))
    return findings


def _lint_name(name: str) -> list[Finding]:
    if not _OPENAI_NAME.match(name):
        return [
            Finding("error", name or "(unnamed)", "bad-name", "name must be 1-64 of [A-Za-z0-9_-]")
        ]
    found: list[Finding] = []
    if not _SNAKE.match(name):
        found.append(Finding("warning", name, "not-snake-case", "name is not snake_case"))
    if len(name) > MAX_NAME_LEN:
        found.append(
            Finding("warning", name, "long-name", f"name longer than {MAX_NAME_LEN} characters")
        )
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().replace("-", "_")
    if _UNSTABLE_NAME.search(words):
        found.append(
            Finding(
                "warning",
                name,
                "unstable-name",
                "name carries a version, date or new/old/tmp marker; renames break "
                "recorded runs and baselines",
            )
        )
    return found


def _lint_description(tool: ToolShape) -> list[Finding]:
    text = tool.description.strip()
    if not text:
        return [Finding("error", tool.name, "no-description", "no description")]
    found: list[Finding] = []
    if len(text.split()) < MIN_DESCRIPTION_WORDS:
        found.append(
            Finding(
                "warning",
                tool.name,
                "short-description",
                f"description has fewer than {MIN_DESCRIPTION_WORDS} words",
            )
        )
    if len(text) > MAX_DESCRIPTION_CHARS:
        found.append(
            Finding(
                "warning",
                tool.name,
                "long-description",
                f"description is {len(text)} characters; keep it under {MAX_DESCRIPTION_CHARS}",
            )
        )
    if not _WHEN_TO_USE.search(text):
        found.append(
            Finding(
                "warning", tool.name, "no-when-to-use", "description does not say when to use it"
            )
        )
    if not _WHEN_NOT.search(text):
        found.append(
            Finding(
                "warning",
                tool.name,
                "no-when-not",
                "description does not say when not to use it (or what to use instead)",
            )
        )
    return found


def _lint_parameters(tool: ToolShape) -> list[Finding]:
    params = tool.parameters
    found: list[Finding] = []
    if params and params.get("type", "object") != "object":
        found.append(
            Finding("error", tool.name, "params-not-object", "parameters must be a JSON object")
        )
    noise = _noise_keys(params)
    if noise:
        found.append(
            Finding(
                "warning",
                tool.name,
                "schema-noise",
                f"schema carries {', '.join(sorted(noise))}: tokens the model does not need",
            )
        )
    properties = params.get("properties") or {}
    if not isinstance(properties, dict):
        found.append(Finding("error", tool.name, "bad-properties", "properties must be an object"))
        return found
    for name in params.get("required") or []:
        if name not in properties:
            found.append(
                Finding(
                    "error",
                    tool.name,
                    "required-undefined",
                    f"required parameter {name!r} is not defined in properties",
                )
            )
    for name, prop in properties.items():
        if not isinstance(prop, dict):
            continue
        described = str(prop.get("description") or "").strip()
        if not described:
            found.append(
                Finding(
                    "error",
                    tool.name,
                    "undescribed-param",
                    f"parameter {name!r} has no description",
                )
            )
        if _looks_closed(name, prop, described):
            found.append(
                Finding(
                    "warning",
                    tool.name,
                    "missing-enum",
                    f"parameter {name!r} seems to take a closed set of values; declare an enum",
                )
            )
    return found


def _looks_closed(name: str, prop: dict[str, Any], description: str) -> bool:
    if "enum" in prop or "const" in prop or prop.get("type") not in ("string", None):
        return False
    if _CLOSED_VALUES.search(description):
        return True
    return name.lower() in _CLOSED_NAMES and bool(re.search(r"\bor\b", description))


def _noise_keys(schema: Any, depth: int = 0) -> set[str]:
    """`$schema` anywhere, and `title` used as a schema keyword (not as a property name)."""
    if not isinstance(schema, dict) or depth > 20:
        return set()
    found = {key for key in ("$schema", "title") if isinstance(schema.get(key), str)}
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            for prop in value.values():
                found |= _noise_keys(prop, depth + 1)
        elif key in ("items", "additionalProperties"):
            found |= _noise_keys(value, depth + 1)
        elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
            for item in value:
                found |= _noise_keys(item, depth + 1)
        elif key in ("$defs", "definitions") and isinstance(value, dict):
            for item in value.values():
                found |= _noise_keys(item, depth + 1)
    return found


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _near_identical(tools: list[ToolShape]) -> list[Finding]:
    """Each tool whose description blurs into a later one's, named once. Bounded for any
    input: only the first COMPARED_WORDS words are compared (a longer description is a
    finding of its own), the cheap upper bounds of the ratio rule most pairs out first, and
    a tool stops being compared once it is named."""
    found: list[Finding] = []
    words = [tuple(_words(t.description)[:COMPARED_WORDS]) for t in tools]
    for i, first in enumerate(tools):
        a = words[i]
        for j in range(i + 1, len(tools)):
            b = words[j]
            if not a or not b:
                continue
            if a == b:
                ratio = 1.0
            else:
                matcher = SequenceMatcher(None, a, b, autojunk=False)
                if matcher.real_quick_ratio() < NEAR_IDENTICAL:
                    continue
                if matcher.quick_ratio() < NEAR_IDENTICAL:
                    continue
                ratio = matcher.ratio()
            if ratio >= NEAR_IDENTICAL:
                found.append(
                    Finding(
                        "error",
                        first.name,
                        "near-identical",
                        f"description is {ratio:.0%} the same as {tools[j].name!r}'s; say "
                        "what sets each apart",
                    )
                )
                break
    return found


def summary(findings: list[Finding]) -> str:
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = len(findings) - errors
    return f"{errors} error(s), {warnings} warning(s)"
