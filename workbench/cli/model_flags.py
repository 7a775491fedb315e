"""Flags shared by the commands that run the agent (`run`, `fork`, `test`): which model to
talk to, its limits, and per-run tool description overrides.

The model comes from `--base-url/--model/--api-key`, else `OPENAI_BASE_URL`,
`WORKBENCH_MODEL` and `OPENAI_API_KEY`; `--script FILE` swaps in a scripted model.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.cli.common import CliError, positive_float, positive_int
from workbench.engine.recording.running import service as run_service
from workbench.engine.recording.running.service import ModelSettings
from workbench.engine.recording.running.service import (
    parse_tool_descriptions as parse_tool_descriptions,
)

if TYPE_CHECKING:  # the model and limit classes load pydantic: only handlers need them
    from agent_core.model.base import ChatModel
    from traces.events import Limits

# The defaults of `traces.events.Limits` the limit flags' help shows, kept here so that
# building the parser loads no models (a test holds them equal).
LIMIT_DEFAULTS = {
    "max_turns": 10,
    "token_budget": 50_000,
    "model_timeout_s": 60.0,
    "tool_timeout_s": 30.0,
    "run_timeout_s": 300.0,
    "context_window": 128_000,
    "max_tools": 8,
}


def add_model_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model")
    group.add_argument("--base-url", help="OpenAI-compatible endpoint (env OPENAI_BASE_URL)")
    group.add_argument("--model", help="model name (env WORKBENCH_MODEL)")
    group.add_argument("--api-key", help="API key (env OPENAI_API_KEY); never written to traces")
    group.add_argument(
        "--script",
        type=Path,
        metavar="FILE",
        help="answer from a model script (JSON or TOML) instead of an endpoint",
    )
    group.add_argument(
        "--no-stream", action="store_true", help="ask for whole responses instead of streams"
    )
    group.add_argument(
        "--api",
        choices=run_service.MODEL_APIS,
        help="wire format: chat completions (default; a fork: the run's own), the OpenAI "
        "Responses API, or Anthropic Messages (then ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY are "
        "read first; default URL https://api.anthropic.com)",
    )


def add_limit_flags(parser: argparse.ArgumentParser) -> None:
    defaults = LIMIT_DEFAULTS
    group = parser.add_argument_group("limits")
    group.add_argument(
        "--max-turns", type=positive_int, metavar="N", help=f"default {defaults['max_turns']}"
    )
    group.add_argument(
        "--token-budget",
        type=positive_int,
        metavar="N",
        help=f"cumulative tokens for the whole run (default {defaults['token_budget']})",
    )
    group.add_argument(
        "--model-timeout",
        type=positive_float,
        metavar="S",
        help=f"default {defaults['model_timeout_s']:g}",
    )
    group.add_argument(
        "--tool-timeout",
        type=positive_float,
        metavar="S",
        help=f"default {defaults['tool_timeout_s']:g}",
    )
    group.add_argument(
        "--run-timeout",
        type=positive_float,
        metavar="S",
        help=f"default {defaults['run_timeout_s']:g}",
    )
    group.add_argument(
        "--max-tools",
        type=positive_int,
        metavar="N",
        help=(
            f"tools offered per request (default {defaults['max_tools']}); with more registered, "
            "the ones whose names and descriptions best match the task are chosen and the "
            "rest named in a warning"
        ),
    )
    group.add_argument(
        "--context-window",
        type=positive_int,
        metavar="N",
        help=f"tokens; history is trimmed at 70%% of it (default {defaults['context_window']})",
    )


def add_builtin_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument(
        "--builtin-tools",
        metavar="LIST",
        help=(
            "offer only these built-in tools, comma-separated (read_file, list_dir, "
            "search_files, calculator); default all"
        ),
    )
    choice.add_argument(
        "--no-builtin-tools",
        action="store_true",
        help="offer no built-in tools (e.g. only an MCP server's)",
    )


def builtin_names(args: argparse.Namespace) -> list[str] | None:
    """The built-ins the flags choose: None for all of them."""
    if getattr(args, "no_builtin_tools", False):
        return []
    listed = getattr(args, "builtin_tools", None)
    if listed is None:
        return None
    return [name.strip() for name in listed.split(",") if name.strip()]


def limits_from_args(args: argparse.Namespace, base: Limits | None = None) -> Limits:
    """`base` (default: the defaults) with every limit flag that was given applied."""
    from traces.events import Limits

    base = base or Limits()
    changes = {
        "max_turns": getattr(args, "max_turns", None),
        "token_budget": getattr(args, "token_budget", None),
        "model_timeout_s": getattr(args, "model_timeout", None),
        "tool_timeout_s": getattr(args, "tool_timeout", None),
        "run_timeout_s": getattr(args, "run_timeout", None),
        "context_window": getattr(args, "context_window", None),
        "max_tools": getattr(args, "max_tools", None),
    }
    return base.model_copy(update={k: v for k, v in changes.items() if v is not None})


def model_settings(args: argparse.Namespace) -> ModelSettings:
    """The model the flags ask for, else the one the environment names."""
    return ModelSettings.from_env(
        base_url=getattr(args, "base_url", None),
        model=getattr(args, "model", None),
        api_key=getattr(args, "api_key", None),
        script=getattr(args, "script", None),
        stream=not getattr(args, "no_stream", False),
        api=getattr(args, "api", None),
    )


def build_model(args: argparse.Namespace, limits: Limits | None = None) -> ChatModel:
    """The model the flags and environment ask for; `SetupError` (exit 2) when there is none."""
    return run_service.build_model(model_settings(args), limits)


def check_tool_names(
    names: Iterable[str], known: list[str], flag: str = "--tool-description"
) -> None:
    """`CliError` naming every one of `names` that is not a known tool."""
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise CliError(
            f"{flag}: no tool named {', '.join(unknown)} "
            f"(tools: {', '.join(sorted(known)) or 'none'})"
        )
