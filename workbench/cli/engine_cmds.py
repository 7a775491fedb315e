"""`workbench replay`, `fork`, `diff` and `serve-model`: the engine from the command line.

Each handler loads runs through `workbench.engine.recording.runs.load`, calls the engine and prints
what it returns; the engine itself never prints.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.cli.common import (
    CliError,
    add_home,
    add_server_flags,
    load_prices,
    open_run,
    positive_float,
    priced,
    print_json,
    resolve_home,
    serve_until_stopped,
    server_limits,
    text_or_file,
)
from workbench.cli.policy_flags import add_tool_policy_flag

if TYPE_CHECKING:  # the engine loads the agent and pydantic: handlers import it
    from workbench.engine.diff.text_changes import Comparison
    from workbench.engine.recording.runs.load import Recording
    from workbench.engine.recording.runs.parent import ParentRun


def register(subparsers: Any) -> None:
    _register_replay(subparsers)
    _register_fork(subparsers)
    _register_diff(subparsers)
    _register_serve(subparsers)


def _load(ref: str, home: Path) -> Recording:
    from workbench.engine.recording.runs.load import RecordingError, load_recording

    try:
        return load_recording(ref, home)
    except RecordingError as exc:
        raise CliError(str(exc)) from None


# --- replay -------------------------------------------------------------------------------


def _register_replay(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="re-execute a recorded run offline and compare it event by event",
        description=(
            "Re-drive the real agent loop with the recorded model answers and tool results "
            "(no network, no tool side effects). Exit 0 when the decision chain replays "
            "identically, 1 at the first divergence, 2 when the run cannot be replayed."
        ),
    )
    parser.add_argument(
        "run", help="run id (or unique prefix), a .jsonl trace path or a bundle file"
    )
    parser.add_argument(
        "--pace",
        choices=("fast", "original"),
        default=None,
        help="fast (default) or original: re-emit events at their recorded timing",
    )
    parser.add_argument(
        "--speed",
        type=positive_float,
        default=None,
        metavar="X",
        help="play X times faster than recorded (implies --pace original)",
    )
    parser.add_argument("--events", action="store_true", help="print each replayed event")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    add_home(parser)
    parser.set_defaults(func=_cmd_replay)


def _cmd_replay(args: argparse.Namespace) -> int:
    import asyncio

    from workbench.cli.bundle_cmds import on_bundles

    opened = on_bundles(args, _cmd_replay, "run")  # a bundle file: each of its runs
    if opened is not None:
        return opened

    from workbench.engine.recording.replay.verify import (
        NotReplayable,
        Pace,
        ReplayStep,
        check_replayable,
        replay_run,
    )

    if args.speed is not None and args.pace == "fast":
        raise CliError("--speed sets the pace of --pace original; drop --pace fast or --speed")
    pace: Pace = args.pace or ("original" if args.speed is not None else "fast")
    speed = args.speed if args.speed is not None else 1.0
    from workbench.engine.recording.replay.stored import replay_source
    from workbench.engine.recording.runs.load import RecordingError

    try:
        # Streamed from its trace, or a page at a time from the store: never held whole.
        recording = replay_source(args.run, resolve_home(args))
    except RecordingError as exc:
        raise CliError(str(exc)) from None
    try:
        check_replayable(recording)
    except NotReplayable as exc:
        raise CliError(str(exc), 2) from exc

    def show(step: ReplayStep) -> None:
        event = step.replayed
        print(f"  ok  seq {step.recorded.seq:>5}  turn {event.turn or '-':>3}  {event.type}")

    outcome = asyncio.run(
        replay_run(
            recording,
            pace=pace,
            speed=speed,
            on_step=show if args.events and not args.json else None,
        )
    )
    if args.json:
        print_json(outcome.to_json() | {"pace": pace, "speed": speed})
    else:
        for line in render_outcome(outcome):
            print(line)
        if pace == "original":
            print(f"  paced as recorded{f', {speed:g}× faster' if speed != 1 else ''}")
    if outcome.status == "incomplete":
        raise CliError(f"run {outcome.run_id[:12]}: {outcome.note}")
    return outcome.exit_code


def render_outcome(outcome: Any) -> list[str]:
    head = f"replay of run {outcome.run_id[:12]}"
    counts = (
        f"{outcome.events_compared}/{outcome.events_recorded} events, "
        f"{outcome.turns_replayed} model turn{'' if outcome.turns_replayed == 1 else 's'}, "
        f"{outcome.wall_s:.3f} s"
    )
    if outcome.status == "identical":
        lines = [f"{head}: identical decision chain ({counts})"]
        return lines + ([f"  note: {outcome.note}"] if outcome.note else [])
    if outcome.status == "incomplete":
        return [f"{head}: identical up to where the recording stops ({counts})"]
    divergence = outcome.divergence
    where = f"turn {divergence.turn}" if divergence.turn is not None else "outside a turn"
    seq = f", recorded seq {divergence.recorded_seq}" if divergence.recorded_seq is not None else ""
    lines = [
        f"{head}: DIVERGED at {where}, event {divergence.event_type}{seq} ({counts})",
        f"  {divergence.reason}",
    ]
    lines += [f"  {diff.render()}" for diff in divergence.diffs[:20]]
    if len(divergence.diffs) > 20:
        lines.append(f"  … and {len(divergence.diffs) - 20} more fields")
    return lines


# --- fork ---------------------------------------------------------------------------------


def _register_fork(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "fork",
        help="re-run a recorded run from turn N with edits, as a new linked run",
        description=(
            "Rebuild the history the run sent at turn N, apply the edits and continue live "
            "from there with the model you choose. Earlier turns are not sent again."
        ),
    )
    parser.add_argument("run", help="run id (or unique prefix) or a .jsonl trace path")
    # A whole number; the fork engine checks it against the run's turns and names the range.
    parser.add_argument("--turn", type=int, required=True, help="turn to fork at (1-based)")
    parser.add_argument("--system", metavar="TEXT|@FILE", help="new system prompt")
    parser.add_argument(
        "--user", metavar="TEXT|@FILE", help="new text for the last user message (the task)"
    )
    parser.add_argument(
        "--tool-description",
        action="append",
        default=[],
        metavar="NAME=TEXT|@FILE",
        help="replace a tool's description (repeatable)",
    )
    parser.add_argument(
        "--tool-schema",
        action="append",
        default=[],
        metavar="NAME=JSON|@FILE",
        help="replace a tool's parameter schema (repeatable)",
    )
    parser.add_argument(
        "--mock",
        action="append",
        default=[],
        metavar="CALL_ID=TEXT|@FILE",
        help="replace the result of a recorded tool call in the rebuilt history (repeatable)",
    )
    parser.add_argument(
        "--allow-side-effects",
        action="store_true",
        help="let new calls to tools that are not read-only run for real (--tool-policy '*=live')",
    )
    add_tool_policy_flag(parser)
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print what the fork would serve from the log and which tools may fire live; "
        "run nothing, write nothing",
    )
    parser.add_argument(
        "--json", action="store_true", help="with --dry-run: print the plan as JSON"
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help=(
            "folder new file-tool calls read (default: the parent run's folder, as it "
            "recorded it; else the current folder)"
        ),
    )
    parser.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="SPEC",
        help="a toolset package.module:attribute whose tools may run live (repeatable)",
    )
    parser.add_argument(
        "--mcp-config",
        type=Path,
        metavar="FILE",
        help="MCP servers (mcpServers JSON) whose tools may run live",
    )
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    from workbench.cli.model_flags import add_builtin_flags, add_limit_flags, add_model_flags

    add_builtin_flags(parser)
    add_model_flags(parser)
    add_limit_flags(parser)
    add_home(parser)
    parser.set_defaults(func=_cmd_fork)


def _pairs(values: list[str], flag: str, key: str, text_name: str) -> dict[str, str]:
    """`KEY=TEXT` or `KEY=@FILE` values of a repeated flag, as its --help names them."""
    pairs: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name:
            raise CliError(f"{flag} takes {key}={text_name} or {key}=@FILE, got {value!r}")
        pairs[name] = text_or_file(text)
    return pairs


def _fork_request(args: argparse.Namespace, home: Path) -> Any:
    from workbench.cli.model_flags import parse_tool_descriptions
    from workbench.cli.policy_flags import fork_policy
    from workbench.engine.recording.fork.plan import ForkRequest

    schemas: dict[str, dict[str, Any]] = {}
    for name, text in _pairs(args.tool_schema, "--tool-schema", "NAME", "JSON").items():
        try:
            schema = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CliError(f"--tool-schema {name}: not valid JSON ({exc.msg})") from None
        if not isinstance(schema, dict):
            raise CliError(f"--tool-schema {name}: expected a JSON object schema")
        schemas[name] = schema
    return ForkRequest(
        turn=args.turn,
        system=text_or_file(args.system) if args.system is not None else None,
        user=text_or_file(args.user) if args.user is not None else None,
        tool_descriptions=parse_tool_descriptions(args.tool_description),
        tool_schemas=schemas,
        mocks=_pairs(args.mock, "--mock", "CALL_ID", "TEXT"),
        allow_side_effects=args.allow_side_effects,
        policy=fork_policy(args, home),
    )


def _cmd_fork(args: argparse.Namespace) -> int:
    from workbench.cli.common import STATUS_EXIT
    from workbench.cli.driving import check_trace_whole, run_agent
    from workbench.cli.model_flags import builtin_names, limits_from_args, model_settings
    from workbench.cli.run_printer import RunPrinter
    from workbench.engine.recording.fork.plan import ForkError
    from workbench.engine.recording.fork.runner import ForkOptions, open_fork, setup_fork

    if args.json and not args.dry_run:
        raise CliError("--json prints the plan of --dry-run; add --dry-run")
    home = resolve_home(args)
    parent = open_run(args.run, home)  # a run of the home: read by turn, as the fork asks
    builtins = builtin_names(args)
    options = ForkOptions(
        settings=model_settings(args),
        root=args.root,
        limits=limits_from_args(args, parent.run_start.limits),
        builtins=None if builtins is None else tuple(builtins),
        tools=tuple(args.tools),
        mcp_config=args.mcp_config,
    )
    try:
        setup = setup_fork(parent, _fork_request(args, home), options, home)
    except ForkError as exc:
        raise CliError(str(exc)) from None
    if args.dry_run:
        plan = setup.dry_run()
        if args.json:
            print_json(plan.to_json())
        else:
            sys.stdout.write("\n".join(plan.lines()) + "\n")
        return 0
    for note in setup.notes:
        sys.stderr.write(f"note: {note}\n")
    prices = load_prices(home)
    fork = open_fork(setup, home)
    sys.stderr.write(
        f"fork {fork.agent.config.run_id} of run {parent.run_id} at turn {setup.plan.turn} "
        f"({len(setup.plan.edits)} edit(s)), model {fork.model.name}\n"
    )
    printer = RunPrinter(sys.stdout)
    result = run_agent(fork.prepared, None if args.quiet else printer)
    outcome = fork.outcome(result)
    totals = result.totals
    cost = priced(prices, outcome.model, totals.input_tokens, totals.output_tokens)
    printer.summary(result, str(outcome.trace), cost, cut=fork.writer.failure)
    check_trace_whole(fork.writer)
    if outcome.stopped is not None:
        sys.stderr.write("  --mock CALL_ID=TEXT mocks a call's result\n")
    if outcome.refused:
        names = sorted(set(outcome.refused))
        sys.stderr.write(
            f"  refused by the tool policy: {', '.join(names)}; --tool-policy {names[0]}=live "
            "lets it run (--allow-side-effects: every tool)\n"
        )
    return STATUS_EXIT[result.status]


# --- diff ---------------------------------------------------------------------------------


def _register_diff(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "diff",
        help="compare two runs: tool schemas and/or decision chains",
        description="Exit 0 when the runs are the same in what is compared, 1 when not.",
    )
    parser.add_argument("a", help="run id, prefix, .jsonl path or bundle file")
    parser.add_argument(
        "b",
        nargs="?",
        help="run id, prefix, .jsonl path or bundle file (left out when A is a bundle: its "
        "two runs, or its run and that run's fork parent)",
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--tools", action="store_true", help="only the tool-schema diff")
    what.add_argument("--chain", action="store_true", help="only the decision-chain diff")
    parser.add_argument("--json", action="store_true", help="print the diff as JSON")
    add_home(parser)
    parser.set_defaults(func=_cmd_diff)


def _cmd_diff(args: argparse.Namespace) -> int:
    from workbench.cli.bundle_cmds import on_bundles

    opened = on_bundles(args, _cmd_diff, "a", "b")
    if opened is not None:
        return opened
    if args.b is None:
        raise CliError("diff needs two runs: RUN_A RUN_B (or one bundle file)")
    from workbench.engine.diff.alignment import diff_tools, render_tools
    from workbench.engine.diff.text_changes import render_comparison

    home = resolve_home(args)
    show_tools, show_chain = not args.chain, not args.tools
    # Runs of the home are read from the store: the tool schemas from each run_start, the
    # chains a window of turns at a time.
    a, b = open_run(args.a, home), open_run(args.b, home)
    result: dict[str, Any] = {"run_a": a.run_id, "run_b": b.run_id}
    lines: list[str] = []
    different = False
    # Each form is built only when it is printed: a long run's chain is costly twice over.
    if show_tools:
        tools = diff_tools(a, b)
        different |= not tools.is_empty
        if args.json:
            result["tools"] = tools.to_json()
        else:
            lines += render_tools(tools, a.run_id, b.run_id)
    if show_chain:
        comparison = _compared(a, b, home)
        different |= not comparison.diff.is_equal
        if args.json:
            result["chain"] = comparison.to_json()
        else:
            lines += ([""] if lines else []) + render_comparison(comparison)
    result["equal"] = not different
    if args.json:
        print_json(result)
    else:
        sys.stdout.write("\n".join(lines) + "\n")
    return 1 if different else 0


def _compared(a: Recording | ParentRun, b: Recording | ParentRun, home: Path) -> Comparison:
    """The two decision chains compared: of two runs of the home, from the store a window
    of turns at a time; else (a trace path, a bundle, a store another process holds) as
    read whole."""
    from traces.store import StoreError, TraceStore
    from workbench.engine.diff.text_changes import compare_runs, compare_stored_runs
    from workbench.engine.recording.runs.load import Recording

    if not isinstance(a, Recording) and not isinstance(b, Recording):
        try:
            with TraceStore.for_home(home) as store:
                return compare_stored_runs(store, a.run_id, b.run_id)
        except StoreError:
            pass
    whole = [run if isinstance(run, Recording) else _load(run.run_id, home) for run in (a, b)]
    return compare_runs(*whole)


# --- serve-model --------------------------------------------------------------------------


def _register_serve(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve-model",
        help="serve a recorded run or a script as a model endpoint (OpenAI or Anthropic)",
        description=(
            "A model HTTP server (/v1/chat/completions, /v1/responses and Anthropic's "
            "/v1/messages, streamed or not; /v1/models) that answers from a recorded run, in "
            "the run's own wire format, or from a model script, so any OpenAI or Anthropic "
            "client can be replayed in its own tests. A request that does not match the "
            "recording gets HTTP 409 with a JSON diff. SIGTERM or Ctrl-C stops it."
        ),
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--replay",
        metavar="RUN",
        nargs="+",
        help="run ids, prefixes or .jsonl paths; each request is answered from the run it "
        "belongs to",
    )
    source.add_argument(
        "--replay-name",
        metavar="NAME",
        help="every run named NAME (captured with the header X-Workbench-Run: NAME)",
    )
    source.add_argument("--script", metavar="FILE", help="model script (docs/script-format.md)")
    parser.add_argument(
        "--match",
        choices=("meaning", "exact"),
        default="meaning",
        help="meaning (default): tool-call arguments compared as JSON, fields sent with their "
        "default value equal to absent; exact: every field as recorded",
    )
    add_server_flags(parser)
    add_home(parser)
    parser.set_defaults(func=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    from workbench.engine.http.serve import ServeError, model_server, replayed_runs

    source: Any
    try:
        if args.script:
            source, what = Path(args.script), f"script {args.script}"
        else:
            # Streamed from their traces: a long run is read a turn at a time, as asked.
            source = replayed_runs(args.replay or [], resolve_home(args), name=args.replay_name)
            ids = ", ".join(run.run_id[:12] for run in source)
            what = f"replay of run{'s' if len(source) > 1 else ''} {ids}"
        server = model_server(
            source, mode=args.match, host=args.host, port=args.port, **server_limits(args)
        )
    except ServeError as exc:
        raise CliError(str(exc)) from None
    return serve_until_stopped(server, lambda: f"serving {server.base_url} ({what}; Ctrl-C stops)")
