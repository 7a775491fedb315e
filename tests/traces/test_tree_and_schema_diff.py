"""The decision-chain tree on golden traces, and the pure tool-schema diff."""

from __future__ import annotations

from pathlib import Path

from traces.reader import read_trace
from traces.schema_diff import diff_tool_schemas, render_text
from traces.tree import build_chain


def _chain(golden_dir: Path, status: str):
    for path in golden_dir.glob("*.jsonl"):
        chain = build_chain(read_trace(path).events)
        if chain.status == status:
            return chain
    raise AssertionError(status)


def test_retry_is_a_second_model_call_and_mcp_frames_belong_to_the_call(
    golden_dir: Path,
) -> None:
    chain = _chain(golden_dir, "completed")
    first = chain.turns[0]
    assert [(m.attempt, m.status) for m in first.model_calls] == [(1, "error"), (2, "ok")]
    assert first.response is not None and first.response.attempt == 2
    tools = {call.name: call for call in first.tool_calls}
    assert tools["read_file"].mcp == [] and len(tools["get_current_time"].mcp) == 2
    assert all(call.status == "ok" and call.end is not None for call in first.tool_calls)


def test_turn_statuses_show_tool_errors_and_unfinished_turns(golden_dir: Path) -> None:
    timeout = _chain(golden_dir, "timeout")
    assert [t.status for t in timeout.turns] == ["tool_error", "error"]
    assert timeout.end is not None and timeout.end.timeout_layer == "model"
    incomplete = _chain(golden_dir, "incomplete")
    assert incomplete.end is None and incomplete.turns[-1].status == "running"
    trimmed = _chain(golden_dir, "max_turns")
    assert [len(t.trims) for t in trimmed.turns] == [0, 0, 1, 0]


def _tool(name: str, description: str, params: dict, required: list[str]) -> dict:
    schema = {"type": "object", "properties": params, "required": required}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": schema},
    }


def test_schema_diff_finds_every_kind_of_change() -> None:
    a = [
        _tool("read", "Read a file from disk.", {"path": {"type": "string"}}, ["path"]),
        _tool("gone", "x", {}, []),
        _tool("same", "s", {}, []),
    ]
    b = [
        _tool(
            "read",
            "Read one text file from the project.",
            {
                "path": {"type": "array", "description": "paths"},
                "mode": {"type": "string", "enum": ["r"]},
            },
            [],
        ),
        _tool("new", "y", {}, []),
        _tool("same", "s", {}, []),
    ]
    diff = diff_tool_schemas(a, b)
    assert (diff.added, diff.removed) == (["new"], ["gone"])
    [change] = diff.changed
    assert ("delete", "a ") in change.description and ("insert", "one text ") in change.description
    kinds = {(p.name, p.kind) for p in change.params}
    assert kinds == {
        ("mode", "added"),
        ("path", "type"),
        ("path", "description"),
        ("path", "required"),
    }
    text = render_text(diff)
    assert "+ tool new" in text and "- tool gone" in text and "[-a-]" in text
    assert diff.to_json()["changed"][0]["name"] == "read"
    assert diff_tool_schemas(a, a).is_empty


def test_schema_diff_goes_into_definitions_branches_and_items() -> None:
    """pydantic puts a nested model in `$defs`; unions are `anyOf`; lists have `items`."""
    from pydantic import BaseModel

    class FiltersA(BaseModel):
        limit: int = 10

    class FiltersB(BaseModel):
        limit: str = "10"

    class SearchA(BaseModel):
        filters: FiltersA
        tags: list[int] | None = None

    class SearchB(BaseModel):
        filters: FiltersB
        tags: list[str] | None = None

    def tool(model: type[BaseModel]) -> dict:
        schema = model.model_json_schema()
        schema["$defs"] = {"Filters": next(iter(schema["$defs"].values()))}
        schema["properties"]["filters"] = {"$ref": "#/$defs/Filters"}
        return {"name": "search", "description": "d", "parameters": schema}

    diff = diff_tool_schemas([tool(SearchA)], [tool(SearchB)])
    [change] = diff.changed
    lines = render_text(diff).splitlines()
    assert "    ~ param $defs.Filters.properties.limit.type: 'integer' -> 'string'" in lines
    assert "    ~ param $defs.Filters.properties.limit.default: 10 -> '10'" in lines
    assert "    ~ param tags.anyOf.0.items.type: 'integer' -> 'string'" in lines
    assert {(p.name, p.kind) for p in change.params} >= {("$defs", "type"), ("tags", "type")}
    assert not any(p.kind in ("added", "removed") for p in change.params)
