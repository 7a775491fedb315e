"""What every JSON view of a run says about a tool: an offered tool's name and a tool call's
fields. `show --json` and mcp-serve's `show_run` shape their runs differently on purpose;
each adds its own fields to these."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from traces.tree import ToolCallNode


def tool_name(schema: dict[str, Any]) -> Any:
    """The name of an offered tool: a chat function's, else the wire tool's own (a hosted
    or custom tool has no `function`)."""
    function = schema.get("function", schema)
    return function.get("name") if isinstance(function, dict) else None


def tool_call_json(call: ToolCallNode, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool call as JSON, with `arguments`, the view's own argument fields, after its
    source: what it was, how it went and what it returned."""
    end = call.end
    return {
        "call_id": call.call_id,
        "name": call.name,
        "source": call.start.source,
        **arguments,
        "parse_error": call.start.parse_error,
        "status": call.status,
        "result": end.result if end else None,
        "error": end.error if end else None,
        "duration_ms": call.duration_ms,
        "mocked": end.mocked if end else False,
    }
