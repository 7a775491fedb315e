"""The check of a tool call's arguments against the tool's JSON schema (`tools.TOOLS`):
defaults filled in, and the first argument that does not fit named in one line."""

from __future__ import annotations

from typing import Any

from workbench.engine.mcp_server.tools import ToolDef, ToolError

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def checked_arguments(tool: ToolDef, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """The call's arguments with defaults filled in; `ToolError` naming the first one that
    does not fit the tool's schema."""
    schema = tool.input_schema
    given = dict(arguments or {})
    properties: dict[str, Any] = schema["properties"]
    unknown = sorted(set(given) - set(properties))
    if unknown:
        raise ToolError(
            f"{tool.name} has no argument {unknown[0]!r}; it takes {', '.join(properties)}"
        )
    for name in schema.get("required", []):
        if given.get(name) is None:
            raise ToolError(f"{tool.name} needs the argument {name!r}")
    out: dict[str, Any] = {}
    for name, prop in properties.items():
        value = given.get(name)
        if value is None:
            if "default" in prop:
                out[name] = prop["default"]
            continue
        out[name] = _checked(f"{tool.name}: {name}", prop, value)
    return out


def _checked(where: str, prop: dict[str, Any], value: Any) -> Any:
    kind = prop.get("type", "string")
    numeric = kind in ("integer", "number")
    wrong = not isinstance(value, _TYPES[kind]) or (numeric and isinstance(value, bool))
    if wrong:
        raise ToolError(f"{where} must be {'an' if kind[0] in 'aeiou' else 'a'} {kind}")
    if "enum" in prop and value not in prop["enum"]:
        raise ToolError(f"{where} must be one of {', '.join(prop['enum'])}; got {value!r}")
    if kind == "integer":
        low, high = prop.get("minimum"), prop.get("maximum")
        if (low is not None and value < low) or (high is not None and value > high):
            span = f"from {low}" + (f" to {high}" if high is not None else " up")
            raise ToolError(f"{where} must be a whole number {span}; got {value}")
    if kind == "string" and len(value) < prop.get("minLength", 0):
        raise ToolError(f"{where} must not be empty")
    if kind == "array" and len(value) > prop.get("maxItems", len(value)):
        raise ToolError(f"{where} takes at most {prop['maxItems']} items")
    inner = prop.get("additionalProperties") if kind == "object" else prop.get("items")
    if isinstance(inner, dict):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            _checked(f"{where}[{key!r}]", inner, item)
    return value
