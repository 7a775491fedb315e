"""The mcpServers config and the MCP -> model conversions, on the recorded real exchanges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_core.mcp_client import HttpServerConfig, StdioServerConfig
from agent_core.mcp_tools import (
    McpConfigError,
    convert_result,
    convert_schema,
    load_mcp_config,
    mcp_secrets,
    parse_mcp_config,
)
from tests.mcp.mcp_support import FIXTURES


def _keys(value: Any, path: str = "") -> list[str]:
    """Every schema keyword path, skipping the names under `properties`."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if path.endswith("properties"):
                found += _keys(item, f"{path}.<{key}>")
            else:
                found.append(key)
                found += _keys(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            found += _keys(item, path)
    return found


def _recorded_tools(name: str) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = json.loads((FIXTURES / name).read_text())["tools"]
    return tools


@pytest.mark.parametrize("fixture", ["mcp-server-time.tools.json", "server-everything.tools.json"])
def test_recorded_schemas_lose_schema_and_title_and_keep_descriptions(fixture: str) -> None:
    for tool in _recorded_tools(fixture):
        original = tool["inputSchema"]
        converted = convert_schema(original)
        assert "$schema" not in _keys(converted) and "title" not in _keys(converted)
        assert converted["type"] == "object" and "properties" in converted
        for name, prop in original.get("properties", {}).items():
            assert converted["properties"][name].get("description") == prop.get("description")
        assert converted.get("required") == original.get("required")


def test_a_property_named_title_survives_and_nested_titles_go() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Args",
        "type": "object",
        "properties": {
            "title": {"type": "string", "title": "Title", "description": "the page title"},
            "tags": {"type": "array", "items": {"type": "string", "title": "Tag"}},
            "when": {"anyOf": [{"type": "string", "title": "A"}, {"type": "null"}]},
        },
        "$defs": {"Inner": {"title": "Inner", "type": "object", "default": {"title": "kept"}}},
    }
    converted = convert_schema(schema)
    assert converted["properties"]["title"] == {"type": "string", "description": "the page title"}
    assert converted["properties"]["tags"]["items"] == {"type": "string"}
    assert converted["properties"]["when"]["anyOf"][0] == {"type": "string"}
    assert converted["$defs"]["Inner"] == {"type": "object", "default": {"title": "kept"}}


def test_a_missing_or_empty_schema_becomes_an_empty_object() -> None:
    assert convert_schema(None) == {"type": "object", "properties": {}}
    assert convert_schema({"type": "object"}) == {"type": "object", "properties": {}}


def _recorded_results(fixture: str) -> dict[int, dict[str, Any]]:
    """JSON-RPC id -> the recorded response message."""
    found: dict[int, dict[str, Any]] = {}
    for line in (FIXTURES / fixture).read_text().splitlines():
        record = json.loads(line)
        message = record.get("msg")
        if record.get("dir") == "s2c" and isinstance(message, dict) and "id" in message:
            found[message["id"]] = message
    return found


def test_recorded_time_results_convert_to_text_and_errors() -> None:
    results = _recorded_results("mcp-server-time.stdio.jsonl")
    ok = convert_result(results[10]["result"])
    assert ok.ok and '"timezone": "Europe/Warsaw"' in ok.text
    assert ok.meta["structured_content"]["timezone"] == "Europe/Warsaw"
    bad_args = convert_result(results[31]["result"])  # isError: missing timezone
    assert not bad_args.ok and bad_args.text.startswith("Error: ")
    assert "Field required" in bad_args.text and "\n" not in bad_args.text


def test_recorded_everything_unknown_tool_is_an_error_result() -> None:
    results = _recorded_results("server-everything.stdio.jsonl")
    unknown = convert_result(results[30]["result"])
    assert not unknown.ok and "Tool no_such_tool not found" in unknown.text
    assert unknown.error == "mcp_tool_error"


def test_structured_content_alone_becomes_json_and_media_is_noted() -> None:
    structured = convert_result({"content": [], "structuredContent": {"temp": 21}})
    assert structured.ok and json.loads(structured.text) == {"temp": 21}
    mixed = convert_result(
        {
            "content": [
                {"type": "text", "text": "Here it is:"},
                {"type": "image", "data": "A" * 400, "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}},
                {"type": "resource_link", "uri": "file:///b.bin", "name": "b.bin"},
            ]
        }
    )
    assert mixed.text.splitlines() == [
        "Here it is:",
        "[image image/png, 300 bytes]",
        "[resource file:///a.txt]",
        "hello",
        "[resource link: b.bin file:///b.bin]",
    ]
    assert mixed.meta["non_text"] == ["image image/png, 300 bytes"]


def test_config_reads_stdio_and_http_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WB_TEST_TOKEN", "s3cret-token")
    (tmp_path / "srv").mkdir()
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "local": {
                        "command": "python",
                        "args": ["server.py", 3],
                        "env": {"API_KEY": "${WB_TEST_TOKEN}", "MODE": "${WB_UNSET:-fast}"},
                        "cwd": "srv",
                    },
                    "remote": {
                        "type": "http",
                        "url": "http://127.0.0.1:9/mcp",
                        "headers": {"Authorization": "Bearer ${WB_TEST_TOKEN}"},
                    },
                    "off": {"command": "nothing", "disabled": True},
                }
            }
        )
    )
    local, remote = load_mcp_config(path)
    assert local == StdioServerConfig(
        "local",
        "python",
        ["server.py", "3"],
        {"API_KEY": "s3cret-token", "MODE": "fast"},
        str(tmp_path.resolve() / "srv"),
    )
    assert remote == HttpServerConfig(
        "remote", "http://127.0.0.1:9/mcp", {"Authorization": "Bearer s3cret-token"}
    )
    assert mcp_secrets([local, remote]) == ["s3cret-token", "s3cret-token"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, 'expected an object with an "mcpServers" object'),
        ({"mcpServers": {"x": {}}}, 'needs "command" (stdio) or "url"'),
        ({"mcpServers": {"x": {"command": ""}}}, "command must be a non-empty string"),
        ({"mcpServers": {"x": {"command": "a", "args": "b"}}}, "args must be a list"),
        ({"mcpServers": {"x": {"url": "ftp://h"}}}, "url must start with http"),
        ({"mcpServers": {"x": {"url": "http://h", "type": "sse"}}}, "legacy SSE transport"),
        ({"mcpServers": {"x": {"command": "a", "env": {"K": 1}}}}, "env must be an object"),
        ({"mcpServers": {"x": {"command": "${WB_NOT_SET_ANYWHERE}"}}}, "WB_NOT_SET_ANYWHERE"),
    ],
)
def test_bad_configs_are_one_clear_line(data: Any, message: str) -> None:
    with pytest.raises(McpConfigError) as caught:
        parse_mcp_config(data, base_dir=Path("."), source="mcp.json")
    text = str(caught.value)
    assert message in text and text.startswith("mcp.json") and "\n" not in text


def test_unreadable_and_invalid_json_files(tmp_path: Path) -> None:
    with pytest.raises(McpConfigError, match="cannot read MCP config"):
        load_mcp_config(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"mcpServers": ')
    with pytest.raises(McpConfigError, match="not valid JSON"):
        load_mcp_config(broken)
