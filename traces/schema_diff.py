"""A pure diff of two lists of tool schemas (OpenAI function format, or bare functions).

Says which tools were added or removed and, per tool present in both, the description as a
word diff and every change in its parameters' JSON Schema, however deep: a parameter added
or removed, a keyword's value (`type`, `enum`, `default`, `format`, a description …), a
property of a nested object added, removed or made (not) required, the schema of `items`,
of `anyOf` branches or of `$defs`. Each change names its path, e.g.
`filters.properties.limit.type: 'integer' -> 'string'`. The engine, the TUI and the
regression suites render it; `render_text` is the plain form.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeAlias

SpanOp: TypeAlias = Literal["equal", "insert", "delete"]
# "added" or "removed" (a parameter), "required" (a property's), else the keyword whose
# value changed ("type", "default", "properties" for a nested property added or removed …):
# JSON Schema's keywords are an open set.
ParamChangeKind: TypeAlias = str

# Keywords whose value is a map of schemas, a list of schemas, or one schema: the diff goes
# into them. Any other keyword's value (`enum`, `default`, `const` …) is compared whole.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_SCHEMA_MAPS |= {"dependentSchemas"}
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SCHEMAS = frozenset(
    {"items", "additionalProperties", "additionalItems", "contains", "not", "if", "then"}
    | {"else", "propertyNames", "unevaluatedItems", "unevaluatedProperties"}
)


@dataclass(frozen=True)
class ParamChange:
    name: str  # the parameter the change is in (or a top-level keyword such as `$defs`)
    kind: ParamChangeKind
    before: Any = None  # None: absent in A
    after: Any = None  # None: absent in B
    path: str = ""  # where, keyword last: `filters.properties.limit.type`


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
    if not before or before.isspace() or not after or after.isspace():
        # One side has no words (a text only one run has): no matching to do, and a text's
        # words joined again are the text from its first word on (no need to split it).
        words_a, words_b = before.lstrip(), after.lstrip()
        return [("delete", words_a)] if words_a else [("insert", words_b)] if words_b else []
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
    """Every difference between two parameter schemas, parameters by name, paths from them."""
    walk = _SchemaWalk()
    walk.schema(None, "", before, after)
    return walk.changes


class _SchemaWalk:
    """Walks two JSON Schemas side by side and collects where they differ."""

    def __init__(self) -> None:
        self.changes: list[ParamChange] = []

    def schema(self, name: str | None, path: str, a: dict[str, Any], b: dict[str, Any]) -> None:
        for key in sorted(set(a) | set(b)):
            old, new = a.get(key), b.get(key)
            if old == new:
                continue
            where = f"{path}.{key}" if path else key
            owner = name if name is not None else key
            if key == "properties" and isinstance(old or {}, dict) and isinstance(new or {}, dict):
                self.properties(name, path, old or {}, new or {})
            elif key == "required" and self.required(name, path, a, b):
                continue
            elif key in _SCHEMA_MAPS and isinstance(old, dict) and isinstance(new, dict):
                for entry in sorted(set(old) | set(new)):
                    self.entry(owner, key, f"{where}.{entry}", old.get(entry), new.get(entry))
            elif (
                key in _SCHEMA_LISTS
                and isinstance(old, list)
                and isinstance(new, list)
                and len(old) == len(new)
            ):
                for i, (x, y) in enumerate(zip(old, new, strict=True)):
                    self.entry(owner, key, f"{where}.{i}", x, y)
            elif key in _SCHEMAS and isinstance(old, dict) and isinstance(new, dict):
                self.schema(owner, where, old, new)
            else:
                self.changes.append(ParamChange(owner, key, old, new, where))

    def entry(self, name: str, key: str, path: str, old: Any, new: Any) -> None:
        """One schema of a map or list under `key`: added, removed, or walked into."""
        if old == new:
            return
        if isinstance(old, dict) and isinstance(new, dict):
            self.schema(name, path, old, new)
        else:
            self.changes.append(ParamChange(name, key, old, new, path))

    def properties(
        self, name: str | None, path: str, old: dict[str, Any], new: dict[str, Any]
    ) -> None:
        for prop in sorted(set(old) | set(new)):
            where = _property_path(path, prop)
            if name is None and prop not in old:
                self.changes.append(ParamChange(prop, "added", None, new[prop], where))
            elif name is None and prop not in new:
                self.changes.append(ParamChange(prop, "removed", old[prop], None, where))
            else:
                owner = name if name is not None else prop
                self.entry(owner, "properties", where, old.get(prop), new.get(prop))

    def required(self, name: str | None, path: str, a: dict[str, Any], b: dict[str, Any]) -> bool:
        """Each property whose required-ness changed, said on the property; False when the
        `required` lists differ in a way that is not that (then they are compared whole)."""
        old, new = a.get("required") or [], b.get("required") or []
        props_a, props_b = a.get("properties") or {}, b.get("properties") or {}
        lists = isinstance(old, list) and isinstance(new, list)
        if not lists or not all(isinstance(prop, str) for prop in [*old, *new]):
            return False
        if not (isinstance(props_a, dict) and isinstance(props_b, dict)):
            return False
        flipped = sorted(set(old) ^ set(new), key=str)
        if any(prop not in props_a and prop not in props_b for prop in flipped):
            return False
        for prop in flipped:
            if prop in props_a and prop in props_b:  # an added or removed one says so itself
                where = f"{_property_path(path, prop)}.required"
                owner = name if name is not None else prop
                self.changes.append(ParamChange(owner, "required", prop in old, prop in new, where))
        return True


def _property_path(path: str, prop: str) -> str:
    """A parameter is named by itself; a nested object's property under `properties`."""
    return f"{path}.properties.{prop}" if path else prop


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


def _param_line(param: ParamChange) -> str:
    path = param.path or param.name
    whole = param.kind in ("added", "removed") or param.kind in _SCHEMA_MAPS
    if whole and param.before is None:
        return f"+ param {path}: {_short(param.after)}"
    if whole and param.after is None:
        return f"- param {path}"
    return f"~ param {path}: {_short(param.before)} -> {_short(param.after)}"


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
            lines.append("    " + _param_line(param))
    return "\n".join(lines)
