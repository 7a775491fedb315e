"""A pure diff of two lists of tool schemas (OpenAI function format, or bare functions).

Says which tools were added or removed and, per tool present in both, the description as a
word diff and each parameter's changes (added, removed, type, enum, required, description).
The engine, the TUI and the regression suites render it; `render_text` is the plain form.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeAlias

SpanOp: TypeAlias = Literal["equal", "insert", "delete"]
ParamChangeKind: TypeAlias = Literal["added", "removed", "type", "enum", "required", "description"]


@dataclass(frozen=True)
class ParamChange:
    name: str
    kind: ParamChangeKind
    before: Any = None
    after: Any = None


@dataclass
class ToolChange:
    name: str
    description: list[tuple[SpanOp, str]] = field(default_factory=list)  # empty: unchanged
    params: list[ParamChange] = field(default_factory=list)

    @property
    def description_changed(self) -> bool:
        return any(op != "equal" for op, _ in self.description)


@dataclass
class ToolSchemaDiff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[ToolChange] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def to_json(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "removed": self.removed,
            "changed": [
                {
                    "name": change.name,
                    "description": [list(span) for span in change.description],
                    "params": [asdict(param) for param in change.params],
                }
                for change in self.changed
            ],
        }


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    inner = tool.get("function")
    return inner if isinstance(inner, dict) else tool


def _by_name(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for tool in tools:
        function = _function(tool)
        name = function.get("name")
        if isinstance(name, str):
            out[name] = function
    return out


def word_diff(before: str, after: str, *, ignore_spacing: bool = False) -> list[tuple[SpanOp, str]]:
    """Spans of `after` against `before`, split on whitespace (kept in the spans). With
    `ignore_spacing`, words are compared without the whitespace after them, so a changed
    line break alone is no difference (equal spans then show `after`'s spacing)."""
    a = re.findall(r"\S+\s*", before)
    b = re.findall(r"\S+\s*", after)
    if ignore_spacing:
        keys_a, keys_b = [word.rstrip() for word in a], [word.rstrip() for word in b]
    else:
        keys_a, keys_b = a, b
    spans: list[tuple[SpanOp, str]] = []
    matcher = difflib.SequenceMatcher(a=keys_a, b=keys_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            spans.append(("equal", "".join(b[j1:j2])))
            continue
        if i2 > i1:
            spans.append(("delete", "".join(a[i1:i2])))
        if j2 > j1:
            spans.append(("insert", "".join(b[j1:j2])))
    return spans


def _param_changes(before: dict[str, Any], after: dict[str, Any]) -> list[ParamChange]:
    props_a = before.get("properties") or {}
    props_b = after.get("properties") or {}
    required_a = set(before.get("required") or [])
    required_b = set(after.get("required") or [])
    changes: list[ParamChange] = []
    for name in sorted(set(props_a) | set(props_b)):
        if name not in props_a:
            changes.append(ParamChange(name, "added", None, props_b[name]))
            continue
        if name not in props_b:
            changes.append(ParamChange(name, "removed", props_a[name], None))
            continue
        old, new = props_a[name] or {}, props_b[name] or {}
        for key, kind in (("type", "type"), ("enum", "enum"), ("description", "description")):
            if old.get(key) != new.get(key):
                changes.append(ParamChange(name, kind, old.get(key), new.get(key)))  # type: ignore[arg-type]
        if (name in required_a) != (name in required_b):
            changes.append(ParamChange(name, "required", name in required_a, name in required_b))
    return changes


def diff_tool_schemas(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> ToolSchemaDiff:
    """How the tools offered in `b` differ from those in `a`."""
    before, after = _by_name(a), _by_name(b)
    diff = ToolSchemaDiff(
        added=[name for name in after if name not in before],
        removed=[name for name in before if name not in after],
    )
    for name in before:
        if name not in after:
            continue
        old, new = before[name], after[name]
        change = ToolChange(name=name)
        old_text, new_text = old.get("description") or "", new.get("description") or ""
        if old_text != new_text:
            change.description = word_diff(old_text, new_text)
        change.params = _param_changes(old.get("parameters") or {}, new.get("parameters") or {})
        if change.description or change.params:
            diff.changed.append(change)
    return diff


def _short(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)


def render_text(diff: ToolSchemaDiff) -> str:
    """Plain text: `[-removed-]` and `{+inserted+}` mark description edits."""
    if diff.is_empty:
        return "tool schemas are identical"
    lines = [f"+ tool {name}" for name in diff.added]
    lines += [f"- tool {name}" for name in diff.removed]
    for change in diff.changed:
        lines.append(f"~ tool {change.name}")
        if change.description:
            marked = "".join(
                text
                if op == "equal"
                else f"[-{text.strip()}-] "
                if op == "delete"
                else f"{{+{text.strip()}+}} "
                for op, text in change.description
            )
            lines.append(f"    description: {marked.strip()}")
        for param in change.params:
            if param.kind == "added":
                lines.append(f"    + param {param.name}: {_short(param.after)}")
            elif param.kind == "removed":
                lines.append(f"    - param {param.name}")
            else:
                lines.append(
                    f"    ~ param {param.name} {param.kind}: "
                    f"{_short(param.before)} -> {_short(param.after)}"
                )
    return "\n".join(lines)
