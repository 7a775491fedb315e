"""`workbench run TASK` (one agent run against a model) and `workbench demo` (offline runs
on a bundled scripted model, then the workbench on them)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traces.home import open_run_trace, traces_dir
from workbench.cli.common import (
    EXIT_CODES,
    STATUS_EXIT,
    CliError,
    ExitCode,
    add_home,
    add_mcp_start_timeout,
    load_prices,
    priced,
    print_json,
    resolve_home,
    text_or_file,
    writable_home,
)
from workbench.cli.lake_cmds import add_push, push_config, push_runs
from workbench.cli.model_flags import (
    add_builtin_flags,
    add_limit_flags,
    add_model_flags,
    build_model,
    builtin_names,
    check_tool_names,
    limits_from_args,
    model_settings,
    parse_tool_descriptions,
)

if TYPE_CHECKING:
    from agent_core.agent import RunResult

if TYPE_CHECKING:
    from traces.prices import Prices

SCRIPTED_NOTICE = (
    "This demo uses a SCRIPTED model: every answer is pre-written in agent_core/demo, not "
    "produced by a real language model. No network and no API key are used."
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = subparsers.add_parser(
        "run",
        help="run the agent on a task and record its trace",
        description=(
            "Run the agent on TASK against an OpenAI-compatible model, printing its text as "
            "it streams and a line per tool call; the trace goes to <home>/traces/."
        ),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("task", help="what the agent should do")
    add_model_flags(run)
    add_limit_flags(run)
    tools = run.add_argument_group("tools and prompt")
    tools.add_argument(
        "--root", type=Path, default=Path("."), help="folder the file tools may read (default .)"
    )
    tools.add_argument(
        "--tools",
        action="append",
        metavar="SPEC",
        help="add a toolset from package.module:attribute (repeatable)",
    )
    tools.add_argument(
        "--mcp-config",
        type=Path,
        metavar="FILE",
        help=(
            "MCP servers in mcpServers JSON format; a server's tool whose name is taken is "
            "offered as SERVER__NAME"
        ),
    )
    add_mcp_start_timeout(tools)
    add_builtin_flags(tools)
    tools.add_argument("--system", metavar="TEXT|@FILE", help="system prompt")
    tools.add_argument(
        "--tool-description",
        action="append",
        metavar="NAME=TEXT|@FILE",
        help="override a tool's description for this run (repeatable)",
    )
    tools.add_argument(
        "--tool-choice",
        metavar="auto|none|required|NAME",
        help=(
            "the request's tool_choice: 'required' or a tool NAME forces a tool call (sent "
            "until the model has called a tool, then left out, so it cannot loop); small "
            "local models rarely pick a tool unprompted"
        ),
    )
    tools.add_argument(
        "--reasoning-arg",
        action="store_true",
        help="offer an optional `reasoning` argument on every tool (logged, not passed on)",
    )
    run.add_argument(
        "--session",
        metavar="NAME",
        help="the session this run is part of (`workbench sessions` groups runs by it)",
    )
    run.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    add_push(run, "the run")
    add_home(run)
    run.set_defaults(func=cmd_run)

    demo = subparsers.add_parser(
        "demo",
        help="record example runs offline with a scripted model, then open the workbench",
        description=SCRIPTED_NOTICE,
    )
    demo.add_argument(
        "--no-tui", action="store_true", help="print the recorded runs instead of opening the TUI"
    )
    add_home(demo)
    demo.set_defaults(func=cmd_demo)


# -- workbench run --------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from agent_core.agent import Agent, AgentConfig
    from traces.events import SESSION_META
    from workbench.cli.driving import check_trace_whole, run_agent
    from workbench.cli.run_printer import RunPrinter
    from workbench.engine.recording.running.service import (
        PreparedRun,
        local_toolsets,
        mcp_config_secrets,
    )

    limits = limits_from_args(args)
    toolsets = local_toolsets(args.root, args.tools, builtin_names(args))
    overrides = parse_tool_descriptions(args.tool_description)
    secrets = mcp_config_secrets(args.mcp_config)
    if args.mcp_config is None:  # MCP tools are known only once their servers start
        check_tool_names(overrides, [spec.name for t in toolsets for spec in t.specs()])
    system_prompt = text_or_file(args.system) if args.system else None
    params = tool_choice_params(args.tool_choice)
    if params and args.mcp_config is None and isinstance(params["tool_choice"], dict):
        check_tool_names(
            [params["tool_choice"]["function"]["name"]],
            [spec.name for t in toolsets for spec in t.specs()],
            flag="--tool-choice",
        )
    model = build_model(args, limits)
    home = writable_home(resolve_home(args))
    lake = push_config(args, home)
    prices = load_prices(home)
    config = AgentConfig(
        task=args.task,
        system_prompt=system_prompt,
        limits=limits,
        params=params,
        stream=not args.no_stream,
        offer_reasoning=args.reasoning_arg,
        tool_descriptions=overrides,
        # What the built-in tools could read, and the session the run is part of.
        meta={"root": str(args.root.resolve())}
        | ({SESSION_META: args.session} if args.session else {}),
    )
    writer = open_run_trace(home, config.run_id, [model_settings(args).api_key, *secrets])
    agent = Agent(model, toolsets, config, sinks=[writer])
    printer = RunPrinter(sys.stderr if args.json else sys.stdout)
    run = PreparedRun(
        agent, writer, mcp_config=args.mcp_config, mcp_start_timeout_s=args.mcp_start_timeout
    )
    result = run_agent(run, printer)
    printer.summary(result, str(writer.path), _cost(prices, model.name, result), cut=writer.failure)
    if args.json:
        print_json(result_json(result, writer.path, writer.failure))
    check_trace_whole(writer)
    if lake is not None and not push_runs(lake, home, [result.run_id]):
        return max(STATUS_EXIT[result.status], ExitCode.USAGE)
    return STATUS_EXIT[result.status]


def _cost(prices: Prices, model: str, result: RunResult) -> str:
    return priced(prices, model, result.totals.input_tokens, result.totals.output_tokens)


def tool_choice_params(choice: str | None) -> dict[str, Any]:
    """`--tool-choice` as request params: a mode as it is, a tool name as a named function."""
    if choice is None:
        return {}
    if choice in ("auto", "none", "required"):
        return {"tool_choice": choice}
    return {"tool_choice": {"type": "function", "function": {"name": choice}}}


def result_json(result: RunResult, trace: Path, cut: str | None = None) -> dict[str, Any]:
    """The run's end as JSON; a run whose trace was `cut` is incomplete, as its trace reads."""
    return {
        "run_id": result.run_id,
        "status": result.status if cut is None else "incomplete",
        "reason": result.reason,
        "timeout_layer": result.timeout_layer,
        "final_answer": result.final_answer,
        "totals": result.totals.model_dump(),
        "trace": str(trace),
    }


# -- workbench demo -------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    from agent_core.agent import Agent, AgentConfig
    from agent_core.demo import SCENARIOS, write_fork_script, write_project
    from agent_core.demo.suite import SUITE_FILE
    from agent_core.model.scripted import ScriptedModel
    from agent_core.tools.builtin import builtin_tools
    from workbench.cli.driving import check_trace_whole, run_agent
    from workbench.cli.run_printer import RunPrinter
    from workbench.engine.recording.running.service import PreparedRun

    home = writable_home(resolve_home(args))
    prices = load_prices(home)
    project = write_project(home / "demo-project")
    # Forks of the demo's runs answer from this script: offline, like the demo itself.
    fork_script = write_fork_script(home)
    print(SCRIPTED_NOTICE)
    if (home / SUITE_FILE).exists():
        print(
            f"This home already holds an earlier demo's runs: these {len(SCENARIOS)} are added "
            "beside them, and the demo suite is rewritten for them (a clean demo: --home DIR)."
        )
    print(f"Recording {len(SCENARIOS)} runs into {home} (project folder: {project})\n")
    printer = RunPrinter(sys.stdout)
    unexpected: list[str] = []
    run_ids: dict[str, str] = {}
    for number, scenario in enumerate(SCENARIOS, 1):
        print(f"── demo {number}/{len(SCENARIOS)}: {scenario.name} (ends: {scenario.expect})")
        print(f"   task: {scenario.task}")
        config = AgentConfig(
            task=scenario.task,
            system_prompt=scenario.system_prompt,
            limits=scenario.run_limits(),
            meta={
                "demo": scenario.name,
                "scripted": True,
                "root": str(project.resolve()),  # what the built-in tools could read
                "fork_script": str(fork_script.resolve()),
            },
        )
        writer = open_run_trace(home, config.run_id)
        model = ScriptedModel(scenario.steps, name="scripted-demo")
        agent = Agent(model, [builtin_tools(project)], config, sinks=[writer])
        result = run_agent(PreparedRun(agent, writer), printer)
        printer.summary(
            result, str(writer.path), _cost(prices, model.name, result), cut=writer.failure
        )
        check_trace_whole(writer)
        print()
        run_ids[scenario.name] = config.run_id
        if result.status != scenario.expect:
            unexpected.append(f"{scenario.name}: {result.status} (expected {scenario.expect})")
    if unexpected:
        raise CliError("demo runs ended unexpectedly: " + "; ".join(unexpected), ExitCode.RUN_ERROR)
    _demo_suite(home, project, run_ids)
    return _show_runs(home, open_tui=not args.no_tui and sys.stdout.isatty())


def _demo_suite(home: Path, project: Path, run_ids: dict[str, str]) -> None:
    """Write the demo's regression suite and run it once, saving its baseline, so
    `workbench test` on it passes offline and an edit shows against the baseline."""
    import asyncio

    from agent_core.demo.suite import BASELINE, write_suite
    from agent_core.model.scripted import ScriptedModel
    from workbench.engine.regress.session import (
        SuiteRequest,
        open_results_store,
        run_suite_request,
    )
    from workbench.engine.regress.suite import load_suite

    path = write_suite(home, run_ids)
    suite = load_suite(path)
    request = SuiteRequest(suite=suite, home=home, root=project, save_baseline=BASELINE)
    model = ScriptedModel.from_file(str(suite.script_path()))
    store = open_results_store(home)
    try:
        outcome = asyncio.run(run_suite_request(request, model, store))
    finally:
        store.close()
    result = outcome.result
    passed = sum(case.status == "pass" for case in result.cases)
    if result.exit_code != 0:
        raise CliError(
            f"the demo suite {path} failed ({passed} of {len(result.cases)} cases passed)",
            ExitCode.RUN_ERROR,
        )
    print(
        f"── demo suite: {path} ({len(result.cases)} cases × {suite.samples} samples, all "
        f"pass; baseline {BASELINE!r} saved). Try `workbench test {path}`, then with "
        '--tool-description list_dir="List a folder\'s files." --baseline demo\n'
    )


def _show_runs(home: Path, open_tui: bool) -> int:
    from workbench.cli import build_parser, main

    commands = _commands(build_parser())
    if open_tui and "tui" in commands:
        return main(["--home", str(home), "tui"])
    if "runs" in commands:
        return main(["--home", str(home), "runs"])
    print(f"Recorded runs are in {traces_dir(home)}.")
    return 0


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()
