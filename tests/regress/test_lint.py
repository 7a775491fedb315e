"""lint-tools on classic mistakes, on real MCP tool lists and on the builtins."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from workbench.engine.regress.lint_tools import lint_tools

FIXTURES = Path(__file__).parent / "fixtures"  # copied from the shared MCP captures
CLI = "import sys; from workbench.cli import main; sys.exit(main())"


def tool(name: str, description: str, **properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties},
        },
    }


GOOD = tool(
    "read_file",
    "Read one text file. Use it when you know the path; do not use it for folders.",
    path={"type": "string", "description": "file path relative to the root"},
)


def codes(schemas: list[dict[str, Any]]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for finding in lint_tools(schemas):
        found.setdefault(finding.code, set()).add(f"{finding.severity}:{finding.tool}")
    return found


def test_a_clear_tool_is_clean() -> None:
    assert lint_tools([GOOD]) == []


def test_classic_mistakes_are_flagged() -> None:
    schemas = [
        GOOD,
        tool("fetchDataV2", "", q={"type": "string"}),
        tool(
            "search",
            "Search the files for text and return matching lines with their paths",
            mode={"type": "string", "description": "either 'exact' or 'fuzzy'"},
        ),
        tool(
            "search_files",
            "Search the files for text and return the matching lines with their paths",
        ),
        {
            "name": "noisy",
            "description": "Noisy tool. Use it for nothing; never call it.",
            "inputSchema": {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "title": "NoisyArgs",
                "properties": {"x": {"type": "string", "title": "X", "description": "x"}},
                "required": ["x", "y"],
            },
        },
    ]
    found = codes(schemas)
    assert found["no-description"] == {"error:fetchDataV2"}
    assert found["undescribed-param"] == {"error:fetchDataV2"}
    assert found["not-snake-case"] == {"warning:fetchDataV2"}
    assert found["unstable-name"] == {"warning:fetchDataV2"}
    assert found["missing-enum"] == {"warning:search"}
    assert found["near-identical"] == {"error:search"}
    assert found["no-when-not"] >= {"warning:search", "warning:search_files"}
    assert found["schema-noise"] == {"warning:noisy"}
    assert found["required-undefined"] == {"error:noisy"}


def test_too_many_tools_is_a_warning() -> None:
    schemas = [
        tool(f"tool_{word}", f"Handle {word} items. Use it for {word}; not for anything else.")
        for word in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota")
    ]
    found = lint_tools(schemas)
    assert [(f.severity, f.code) for f in found] == [("warning", "too-many-tools")]


def run_cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI, "--home", str(home), "lint-tools", *args],
        capture_output=True,
        text=True,
    )


def test_cli_on_a_real_mcp_tool_list(tmp_path: Path) -> None:
    result = run_cli(str(FIXTURES / "server-everything.tools.json"), home=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "get-resource-reference: parameter 'resourceType' has no description" in result.stdout
    assert "schema carries $schema" in result.stdout
    assert "error(s)" in result.stderr and "Traceback" not in result.stderr
    as_json = run_cli("--json", str(FIXTURES / "mcp-server-time.tools.json"), home=tmp_path)
    report = json.loads(as_json.stdout)
    assert as_json.returncode == 0 and report["tools"] == 2 and report["errors"] == 0
    assert {f["code"] for f in report["findings"]} >= {"schema-noise"}


def test_cli_passes_the_builtins(tmp_path: Path) -> None:
    result = run_cli("--tools", "builtin", "--root", str(tmp_path), home=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    # The summary names what it checked.
    checked = "4 built-in tool(s) (read_file, list_dir, search_files, calculator): 0 error(s)"
    assert checked in result.stderr
    # With no argument at all, the built-in tools are what is linted.
    bare = run_cli(home=tmp_path)
    assert bare.returncode == 0, bare.stdout + bare.stderr
    assert bare.stdout == result.stdout and checked in bare.stderr


def test_cli_bad_input_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{nope", encoding="utf-8")
    result = run_cli(str(bad), home=tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "not valid JSON" in result.stderr


def test_cli_on_a_real_mcp_server(tmp_path: Path) -> None:
    server = Path(__file__).parents[1] / "mcp" / "servers" / "fault_server.py"
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"faults": {"command": sys.executable, "args": [str(server)]}}}),
        encoding="utf-8",
    )
    result = run_cli("--json", "--tools", str(config), home=tmp_path)
    report = json.loads(result.stdout)
    assert result.returncode == 1 and report["tools"] == 9
    found = {(f["code"], f["tool"]) for f in report["findings"]}
    assert ("undescribed-param", "echo") in found and ("too-many-tools", None) in found
    # The MCP conversion already dropped $schema and title, so there is no noise left.
    assert not any(code == "schema-noise" for code, _ in found)


def test_huge_tool_lists_are_linted_within_bounds() -> None:
    # 200 tools of 50 KB descriptions, alike and unlike (each pair compared whole took
    # minutes; through mcp-serve no answer came): each near-identical tool is named once.
    def text(seed: int) -> str:
        return " ".join(f"w{(seed * 7919 + n * 104729) % 5003}" for n in range(8_000))

    schemas = [tool(f"same_{n}", text(1)) for n in range(100)]
    schemas += [tool(f"other_{n}", text(n + 2)) for n in range(100)]
    found = [f for f in lint_tools(schemas) if f.code == "near-identical"]
    assert sorted(str(f.tool) for f in found) == sorted(f"same_{n}" for n in range(99))


def test_lint_tools_names_the_file_it_checked(tmp_path: Path) -> None:
    listed = tmp_path / "tools.json"
    listed.write_text(json.dumps([GOOD]), encoding="utf-8")
    result = run_cli(str(listed), home=tmp_path)
    assert result.stderr.strip().startswith(f"1 tool(s) of {listed} (read_file): ")
