"""`workbench test`, `workbench capture-case` and `workbench lint-tools`: regression tests
for tool descriptions, with CI exit codes (0 pass, 1 failure or regression, 2 could not run).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from workbench.cli.common import CliError, add_home, print_json, resolve_home
from workbench.engine.lint_tools import MAX_TOOLS, lint_tools, summary
from workbench.engine.regress_context import RecordingError, find_trace
from workbench.engine.regress_sources import (
    ToolSourceError,
    is_mcp_config,
    open_tools,
    schemas_from_file,
    schemas_from_run,
    schemas_of,
)


def register(subparsers: Any) -> None:
    _register_lint(subparsers)


def _register_lint(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lint-tools",
        help="check tool descriptions and schemas for mistakes that mislead models",
        description=(
            "Model-free lint of tool schemas. Errors (exit 1): missing or near-identical "
            "descriptions, undescribed parameters, invalid names. Warnings: no when/when-not "
            "guidance, names that are not short stable snake_case, closed values without "
            "an enum, more than 8 tools, $schema/title noise."
        ),
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "file", nargs="?", help="JSON file of tool schemas (list or {tools: [...]})"
    )
    source.add_argument(
        "--tools", help="builtin | package.module:registry | MCP config JSON | schema JSON"
    )
    source.add_argument("--run", help="lint the schemas a recorded run offered (run id or .jsonl)")
    parser.add_argument("--root", default=".", help="root folder for the builtin tools")
    parser.add_argument(
        "--max-tools", type=int, default=MAX_TOOLS, help="warn above this many tools"
    )
    parser.add_argument("--json", action="store_true", help="print findings as JSON")
    add_home(parser)
    parser.set_defaults(func=run_lint)


def run_lint(args: argparse.Namespace) -> int:
    try:
        schemas = _load(args)
    except (ToolSourceError, RecordingError) as exc:
        raise CliError(str(exc)) from None
    findings = lint_tools(schemas, max_tools=args.max_tools)
    errors = any(f.severity == "error" for f in findings)
    if args.json:
        print_json(
            {
                "tools": len(schemas),
                "errors": sum(f.severity == "error" for f in findings),
                "warnings": sum(f.severity == "warning" for f in findings),
                "findings": [f.to_dict() for f in findings],
            }
        )
    else:
        for finding in findings:
            print(finding.line())
        print(f"{len(schemas)} tool(s): {summary(findings)}", file=sys.stderr)
    return 1 if errors else 0


def _load(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.run:
        path = Path(args.run)
        if path.suffix != ".jsonl":
            path = find_trace(args.run, [resolve_home(args) / "traces"])
        return schemas_from_run(path)
    reference = args.tools or args.file
    if reference is None:
        raise CliError("give a schema file, --tools builtin|module:registry|mcp.json, or --run RUN")
    path = Path(reference)
    if path.suffix == ".json" and not is_mcp_config(path):
        return schemas_from_file(path)
    return asyncio.run(_open_and_list(reference, Path(args.root)))


async def _open_and_list(reference: str, root: Path) -> list[dict[str, Any]]:
    async with open_tools(reference, root=root) as toolsets:
        return schemas_of(toolsets)
