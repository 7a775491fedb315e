"""`--tool-policy NAME=POLICY` (on `fork` and `test`): each tool's side effects in a re-run,
read with `<home>/tool-policy.toml` by `workbench.engine.recording.fork.tool_policy`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.cli.common import CliError

if TYPE_CHECKING:
    from workbench.engine.recording.fork.tool_policy import PolicyRule, ToolPolicy


def add_tool_policy_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tool-policy",
        action="append",
        default=[],
        metavar="NAME=POLICY",
        help="what a tool's calls do in the re-run: recorded | mock[:TEXT] | live | deny "
        "(repeatable; NAME may be a glob; also <home>/tool-policy.toml)",
    )


def tool_policy_rules(args: Any) -> list[PolicyRule]:
    from workbench.engine.recording.fork.tool_policy import PolicyError, parse_rule

    try:
        return [parse_rule(text) for text in args.tool_policy]
    except PolicyError as exc:
        raise CliError(str(exc)) from None


def fork_policy(args: Any, home: Path) -> ToolPolicy:
    """--tool-policy, then --allow-side-effects (`*=live`), then the home's file."""
    from workbench.engine.recording.fork.tool_policy import PolicyError, ToolPolicy, load_home_rules

    rules = tool_policy_rules(args)
    try:
        home_rules = load_home_rules(home)
    except PolicyError as exc:
        raise CliError(str(exc)) from None
    return ToolPolicy.layered(
        cli=rules, allow_side_effects=bool(args.allow_side_effects), home=home_rules
    )
