"""Tool schemas of two runs side by side, with `traces.schema_diff`'s changes highlighted.

Pure: (tools of A, tools of B, their ToolSchemaDiff) -> one Rich table. Removed things are
red on the A side, added things green on the B side, changed parameters yellow on both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from traces.schema_diff import ToolSchemaDiff
from workbench.tui.render import short_id

REMOVED = "bold red"
ADDED = "bold green"
CHANGED = "yellow"


@dataclass(frozen=True)
class SchemaPair:
    run_a: str
    run_b: str
    tools_a: list[dict[str, Any]]
    tools_b: list[dict[str, Any]]
    diff: ToolSchemaDiff


def _functions(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for tool in tools:
        nested = tool.get("function")
        function: dict[str, Any] = nested if isinstance(nested, dict) else tool
        if isinstance(function.get("name"), str):
            found[function["name"]] = function
    return found


def _params(function: dict[str, Any], marks: dict[str, str]) -> Text:
    schema = function.get("parameters") or {}
    required = set(schema.get("required") or [])
    text = Text()
    for name, spec in (schema.get("properties") or {}).items():
        spec = spec if isinstance(spec, dict) else {}
        line = Text(f"  {name}", style=marks.get(name, "cyan"))
        line.append(f": {spec.get('type', 'any')}", style=marks.get(name, "dim"))
        if spec.get("enum"):
            line.append(f" {spec['enum']}", style=marks.get(name, "dim"))
        if name in required:
            line.append(" required", style=marks.get(name, "dim"))
        if spec.get("description"):
            line.append(f" — {spec['description']}", style=marks.get(name, "dim"))
        text.append_text(line)
        text.append("\n")
    return text


def _side(
    function: dict[str, Any] | None,
    spans: Sequence[tuple[str, str]],
    hidden: str,
    marks: dict[str, str],
) -> RenderableType:
    """One cell: description (word diff when it changed) and parameters."""
    if function is None:
        return Text("—", style="dim")
    if spans:
        description = Text()
        for op, text in spans:
            if op == "equal":
                description.append(text)
            elif op != hidden:
                style = f"{REMOVED} strike" if op == "delete" else f"{ADDED} underline"
                description.append(text, style=style)
    else:
        description = Text(str(function.get("description") or ""))
    return Group(description, _params(function, marks))


def render_schema_diff(pair: SchemaPair) -> RenderableType:
    diff = pair.diff
    a, b = _functions(pair.tools_a), _functions(pair.tools_b)
    changes = {change.name: change for change in diff.changed}
    table = Table(expand=True, show_lines=True, header_style="bold")
    table.add_column("tool", no_wrap=True, width=20)
    table.add_column(f"A {short_id(pair.run_a)}", ratio=1, overflow="fold")
    table.add_column(f"B {short_id(pair.run_b)}", ratio=1, overflow="fold")
    for name in [*a, *(n for n in b if n not in a)]:
        change = changes.get(name)
        marks_a: dict[str, str] = {}
        marks_b: dict[str, str] = {}
        for param in change.params if change else []:
            if param.kind == "removed":
                marks_a[param.name] = REMOVED
            elif param.kind == "added":
                marks_b[param.name] = ADDED
            else:
                marks_a[param.name] = marks_b[param.name] = CHANGED
        if name in diff.added:
            label = Text.assemble(("+ ", ADDED), (name, ADDED), ("\nadded in B", "green"))
        elif name in diff.removed:
            label = Text.assemble(("- ", REMOVED), (name, REMOVED), ("\nremoved in B", "red"))
        elif change is not None:
            what = ["description"] if change.description_changed else []
            what += sorted({f"{p.name} ({p.kind})" for p in change.params})
            label = Text.assemble(
                ("~ ", CHANGED), (name, f"bold {CHANGED}"), ("\n" + "\n".join(what), CHANGED)
            )
        else:
            label = Text(name, style="bold")
        spans = list(change.description) if change else []
        table.add_row(
            label,
            _side(a.get(name), spans, "insert", marks_a),
            _side(b.get(name), spans, "delete", marks_b),
        )
    if diff.is_empty:
        summary = Text("The two runs offered the same tools, word for word.", style="bold green")
    else:
        summary = Text(
            f"{len(diff.added)} added, {len(diff.removed)} removed, {len(diff.changed)} changed",
            style="bold yellow",
        )
    return Group(summary, Text(""), table)
