"""Flags shared by the commands that run the agent (`run`, `fork`, `test`): which model to
talk to, its limits, and per-run tool description overrides.

The model comes from `--base-url/--model/--api-key`, else `OPENAI_BASE_URL`,
`WORKBENCH_MODEL` and `OPENAI_API_KEY`; `--script FILE` swaps in a scripted model.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from agent_core.model.base import ChatModel
from traces.events import Limits
from workbench.cli.common import CliError, positive_float, positive_int, text_or_file

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_MODEL_HINT = (
    "no model configured: pass --base-url URL --model NAME (or set OPENAI_BASE_URL and "
    "WORKBENCH_MODEL, plus OPENAI_API_KEY if the endpoint needs one), or --script FILE to "
    "use a scripted model"
)


@dataclass(frozen=True)
class ModelSettings:
    base_url: str | None
    model: str | None
    api_key: str | None
    script: Path | None


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


def add_limit_flags(parser: argparse.ArgumentParser) -> None:
    defaults = Limits()
    group = parser.add_argument_group("limits")
    group.add_argument(
        "--max-turns", type=positive_int, metavar="N", help=f"default {defaults.max_turns}"
    )
    group.add_argument(
        "--token-budget",
        type=positive_int,
        metavar="N",
        help=f"cumulative tokens for the whole run (default {defaults.token_budget})",
    )
    group.add_argument(
        "--model-timeout",
        type=positive_float,
        metavar="S",
        help=f"default {defaults.model_timeout_s:g}",
    )
    group.add_argument(
        "--tool-timeout",
        type=positive_float,
        metavar="S",
        help=f"default {defaults.tool_timeout_s:g}",
    )
    group.add_argument(
        "--run-timeout",
        type=positive_float,
        metavar="S",
        help=f"default {defaults.run_timeout_s:g}",
    )
    group.add_argument(
        "--context-window",
        type=positive_int,
        metavar="N",
        help=f"tokens; history is trimmed at 70%% of it (default {defaults.context_window})",
    )


def limits_from_args(args: argparse.Namespace, base: Limits | None = None) -> Limits:
    """`base` (default: the defaults) with every limit flag that was given applied."""
    base = base or Limits()
    changes = {
        "max_turns": getattr(args, "max_turns", None),
        "token_budget": getattr(args, "token_budget", None),
        "model_timeout_s": getattr(args, "model_timeout", None),
        "tool_timeout_s": getattr(args, "tool_timeout", None),
        "run_timeout_s": getattr(args, "run_timeout", None),
        "context_window": getattr(args, "context_window", None),
    }
    return base.model_copy(update={k: v for k, v in changes.items() if v is not None})


def model_settings(args: argparse.Namespace) -> ModelSettings:
    return ModelSettings(
        base_url=getattr(args, "base_url", None) or os.environ.get("OPENAI_BASE_URL") or None,
        model=getattr(args, "model", None) or os.environ.get("WORKBENCH_MODEL") or None,
        api_key=getattr(args, "api_key", None) or os.environ.get("OPENAI_API_KEY") or None,
        script=getattr(args, "script", None),
    )


def build_model(args: argparse.Namespace, limits: Limits | None = None) -> ChatModel:
    """The model the flags and environment ask for; `CliError` (exit 2) when there is none."""
    settings = model_settings(args)
    limits = limits or Limits()
    if settings.script is not None:
        from agent_core.model.script import ScriptError
        from agent_core.model.scripted import ScriptedModel

        try:
            return ScriptedModel.from_file(settings.script)
        except ScriptError as exc:
            raise CliError(str(exc)) from None
    if not settings.model or not (settings.base_url or settings.api_key):
        raise CliError(NO_MODEL_HINT)
    from agent_core.model.openai_client import OpenAIChatModel
    from agent_core.model.retry import RetryPolicy

    return OpenAIChatModel(
        settings.base_url or OPENAI_DEFAULT_BASE_URL,
        settings.api_key,
        settings.model,
        stream=not getattr(args, "no_stream", False),
        timeout_s=limits.model_timeout_s,
        retry=RetryPolicy(deadline_s=limits.model_timeout_s),
    )


def parse_tool_descriptions(values: list[str] | None) -> dict[str, str]:
    """`NAME=TEXT` or `NAME=@FILE` pairs from repeated --tool-description flags."""
    overrides: dict[str, str] = {}
    for value in values or ():
        name, sep, text = value.partition("=")
        if not sep or not name.strip():
            raise CliError(f"--tool-description {value!r}: expected NAME=TEXT or NAME=@FILE")
        description = text_or_file(text).strip()
        if not description:
            raise CliError(f"--tool-description for {name.strip()}: the description is empty")
        overrides[name.strip()] = description
    return overrides


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
