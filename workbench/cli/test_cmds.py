"""`workbench test`, `workbench capture-case` and `workbench lint-tools`: regression tests
for tool descriptions, with CI exit codes (0 pass, 1 failure or regression, 2 could not run).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.cli.common import (
    CliError,
    add_home,
    fraction,
    positive_float,
    positive_int,
    print_json,
    resolve_home,
)
from workbench.cli.model_flags import (
    LIMIT_DEFAULTS,
    add_builtin_flags,
    add_model_flags,
    build_model,
    builtin_names,
    model_settings,
    parse_tool_descriptions,
)
from workbench.cli.policy_flags import add_tool_policy_flag, tool_policy_rules
from workbench.cli.progress import StderrProgress

# The regression engine loads the agent, pydantic and DuckDB: handlers import it.
if TYPE_CHECKING:
    from workbench.engine.regress.runner import SampleResult
    from workbench.engine.regress.session import SuiteOutcome, SuiteRequest


def register(subparsers: Any) -> None:
    _register_test(subparsers)
    _register_capture(subparsers)
    _register_lint(subparsers)


# --- test ---------------------------------------------------------------------------------


def _register_test(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "test",
        help="run a regression suite of tool-choice cases (exit 0 pass, 1 fail, 2 error)",
        description=(
            "Run every case of a TOML suite N times against the model and check which tool "
            "it chooses. Exit 0 when all cases pass, 1 on any failure or regression against "
            "--baseline, 2 when the suite could not run. See docs/regression.md."
        ),
    )
    parser.add_argument("suite", help="suite file (TOML)")
    add_model_flags(parser)
    parser.add_argument("--root", default=".", help="root folder for the builtin tools")
    add_builtin_flags(parser)
    parser.add_argument(
        "--tool-description",
        action="append",
        metavar="NAME=TEXT|@FILE",
        help="offer this description for tool NAME instead (repeatable)",
    )
    parser.add_argument("--samples", type=positive_int, metavar="N", help="runs per case")
    parser.add_argument(
        "--concurrency", type=positive_int, default=4, metavar="N", help="samples at once (4)"
    )
    parser.add_argument(
        "--model-timeout",
        type=positive_float,
        default=60.0,
        metavar="S",
        help="per model call (60)",
    )
    parser.add_argument("--save-baseline", metavar="NAME", help="store this run as baseline NAME")
    parser.add_argument(
        "--baseline", metavar="NAME", help="fail cases whose rate fell below NAME's"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    add_tool_policy_flag(parser)
    add_home(parser)
    parser.set_defaults(func=run_test)


def run_test(args: argparse.Namespace) -> int:
    import asyncio

    from traces.events import Limits
    from workbench.engine.regress.session import SuiteRequest
    from workbench.engine.regress.suite import SuiteError, load_suite

    home = resolve_home(args)
    try:
        suite = load_suite(args.suite)
    except SuiteError as exc:
        raise CliError(str(exc)) from None
    request = SuiteRequest(
        suite=suite,
        home=home,
        root=Path(args.root),
        samples=args.samples,
        concurrency=args.concurrency,
        tool_descriptions=parse_tool_descriptions(args.tool_description),
        builtin_tools=builtin_names(args),
        baseline=args.baseline,
        save_baseline=args.save_baseline,
        model_timeout_s=args.model_timeout,
        secrets=[model_settings(args).api_key],
        tool_policy=tool_policy_rules(args),
    )
    if args.model_timeout <= 0:
        raise CliError("--model-timeout must be greater than 0")
    if suite.script is not None and not (args.script or args.model or args.base_url):
        # The suite's own script answers unless the command line names a model.
        args.script = str(suite.script_path())
    model = build_model(args, Limits(model_timeout_s=args.model_timeout))
    progress = _Progress()
    try:
        outcome = asyncio.run(_run(request, model, home, progress))
    except SuiteError as exc:
        raise CliError(str(exc)) from None
    finally:
        progress.close()
    _report(outcome, args)
    return outcome.result.exit_code


async def _run(request: SuiteRequest, model: Any, home: Path, progress: _Progress) -> SuiteOutcome:
    from workbench.engine.regress.session import open_results_store, run_suite_request

    store = open_results_store(home)
    try:
        return await run_suite_request(request, model, store, progress=progress.update)
    finally:
        store.close()
        close = getattr(model, "aclose", None)
        if close is not None:
            await close()


def _report(outcome: SuiteOutcome, args: argparse.Namespace) -> None:
    from workbench.engine.regress.report import summary_line, table, to_json, to_junit

    result = outcome.result
    if args.junit:
        try:
            Path(args.junit).write_text(to_junit(result, outcome.details), encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot write {args.junit}: {exc.strerror or exc}") from None
    if args.json:
        print_json({**to_json(result), "details": outcome.details})
        return
    for line in table(result):
        print(line)
    for lines in outcome.details.values():
        print()
        for line in lines:
            print(line)
    print()
    print(summary_line(result))
    if outcome.saved_baseline:
        print(f"saved baseline {outcome.saved_baseline!r} for suite {result.suite.name}")


class _Progress:
    """Samples done and failed so far, drawn by the workbench's one progress bar (shown
    from the start: a suite's first samples already say whether it goes well)."""

    def __init__(self) -> None:
        self.bar = StderrProgress(show_after_s=0)
        self.failed = 0

    def update(self, done: int, total: int, sample: SampleResult) -> None:
        self.failed += not sample.passed
        self.bar(f"{done}/{total} samples, {self.failed} failed", done / max(total, 1))

    def close(self) -> None:
        self.bar.close()


# --- capture-case -------------------------------------------------------------------------


def _register_capture(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "capture-case",
        help="append suite cases from recorded decisions: a run's turn, or a label's turns",
        description=(
            "Append a case to a suite file: the recorded context of RUN at --turn, expecting "
            "the tool the model chose there (or, at a turn that answered without one, no "
            "tool). --from-label L appends one case per turn labelled L (a run labelled as a "
            "whole gives its failing turn, else its last). The traces are copied next to the "
            "suite (traces/) so the suite also runs where the home folder is not available."
        ),
    )
    parser.add_argument("run", nargs="?", help="run id (or unique prefix) or trace file")
    parser.add_argument("--turn", type=positive_int, metavar="N", help="the turn (with RUN)")
    parser.add_argument(
        "--from-label", metavar="L", help="one case per turn labelled L (instead of RUN)"
    )
    parser.add_argument("--suite", required=True, metavar="FILE", help="suite file to append to")
    parser.add_argument("--id", help="case id (default: <run>-t<turn>)")
    parser.add_argument(
        "--with-args", action="store_true", help="also expect the recorded arguments"
    )
    parser.add_argument(
        "--with-text", action="store_true", help="also expect the text the model said there"
    )
    parser.add_argument(
        "--expect-text", metavar="TEXT", help="also expect the model's text to contain TEXT"
    )
    parser.add_argument("--min-pass-rate", type=fraction, default=1.0, metavar="R")
    parser.add_argument("--no-copy", action="store_true", help="do not copy the trace")
    add_home(parser)
    parser.set_defaults(func=run_capture)


def run_capture(args: argparse.Namespace) -> int:
    from workbench.engine.regress.capture import Expect

    expect = Expect(
        args=args.with_args,
        text=args.with_text or bool(args.expect_text),
        given_text=args.expect_text,
        min_pass_rate=args.min_pass_rate,
    )
    if args.from_label is not None:
        if args.run or args.turn or args.id:
            raise CliError("--from-label takes no RUN, --turn or --id: it captures every turn")
        return _capture_label(args, expect)
    if not args.run or args.turn is None:
        raise CliError("give RUN --turn N, or --from-label L")
    from workbench.engine.regress.capture import capture_turn
    from workbench.engine.regress.context import RecordingError, find_trace
    from workbench.engine.regress.suite import SuiteError

    home = resolve_home(args)
    suite_path = Path(args.suite)
    try:
        path = find_trace(args.run, [home / "traces"])
        case = capture_turn(path, args.turn, suite_path, expect, args.id, copy=not args.no_copy)
    except (RecordingError, SuiteError, ValueError, TypeError) as exc:
        raise CliError(str(exc)) from None
    print(f"added case {case.id!r} to {suite_path}: expect {case.expected_text()}")
    return 0


def _capture_label(args: argparse.Namespace, expect: Any) -> int:
    from workbench.cli.read_cmds import open_store
    from workbench.engine.regress.capture import capture_label
    from workbench.engine.regress.suite import SuiteError

    home = resolve_home(args)
    suite_path = Path(args.suite)
    try:
        with open_store(args) as store:
            captured = capture_label(
                store, [home / "traces"], args.from_label, suite_path, expect, copy=not args.no_copy
            )
    except SuiteError as exc:
        raise CliError(str(exc)) from None
    if not captured:
        raise CliError(
            f"no run or turn is labelled {args.from_label!r}; `workbench runs --label "
            f"{args.from_label}` lists what is"
        )
    added = [item for item in captured if item.case is not None]
    for item in captured:
        where = f"run {item.source.run_id[:12]} turn {item.source.turn} ({item.source.why})"
        if item.case is not None:
            print(f"added case {item.case.id!r}: {where}, expect {item.case.expected_text()}")
        else:
            print(f"skipped {where}: {item.problem}", file=sys.stderr)
    print(f"{len(added)} of {len(captured)} labelled turn(s) added to {suite_path}")
    return 0 if any(i.case or i.problem == "already in the suite" for i in captured) else 1


# --- lint-tools ---------------------------------------------------------------------------


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
        "file",
        nargs="?",
        help="JSON file of tool schemas (list or {tools: [...]}); none: the built-in tools",
    )
    source.add_argument(
        "--tools", help="builtin | package.module:registry | MCP config JSON | schema JSON"
    )
    source.add_argument("--run", help="lint the schemas a recorded run offered (run id or .jsonl)")
    parser.add_argument("--root", default=".", help="root folder for the builtin tools")
    parser.add_argument(
        "--max-tools",
        type=positive_int,
        default=LIMIT_DEFAULTS["max_tools"],
        help="warn above this many tools",
    )
    parser.add_argument("--json", action="store_true", help="print findings as JSON")
    add_home(parser)
    parser.set_defaults(func=run_lint)


def run_lint(args: argparse.Namespace) -> int:
    from workbench.engine.regress.context import RecordingError
    from workbench.engine.regress.lint_tools import lint_tools, summary
    from workbench.engine.regress.sources import ToolSourceError

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
        print(f"{_checked(args, schemas)}: {summary(findings)}", file=sys.stderr)
    return 1 if errors else 0


# How many tool names the summary line lists before it counts the rest.
_NAMES_SHOWN = 8


def _checked(args: argparse.Namespace, schemas: list[dict[str, Any]]) -> str:
    """Which tools were linted, as the summary line names them."""
    if args.run:
        source = f"tool(s) run {args.run} offered"
    elif (args.tools or args.file or "builtin") != "builtin":
        source = f"tool(s) of {args.tools or args.file}"
    else:
        source = "built-in tool(s)"
    names = [
        str(function.get("name"))
        for schema in schemas
        if isinstance(function := schema.get("function", schema), dict)
    ]
    shown = ", ".join(names[:_NAMES_SHOWN])
    if len(names) > _NAMES_SHOWN:
        shown += f", … {len(names) - _NAMES_SHOWN} more"
    return f"{len(schemas)} {source}" + (f" ({shown})" if shown else "")


def _load(args: argparse.Namespace) -> list[dict[str, Any]]:
    import asyncio

    from workbench.engine.regress.context import find_trace
    from workbench.engine.regress.sources import (
        is_mcp_config,
        schemas_from_file,
        schemas_from_run,
    )

    if args.run:
        path = Path(args.run)
        if path.suffix != ".jsonl":
            path = find_trace(args.run, [resolve_home(args) / "traces"])
        return schemas_from_run(path)
    # With nothing named, the built-in tools: what every run offers unless told otherwise.
    reference = args.tools or args.file or "builtin"
    path = Path(reference)
    if path.suffix == ".json" and not is_mcp_config(path):
        return schemas_from_file(path)
    return asyncio.run(_open_and_list(reference, Path(args.root)))


async def _open_and_list(reference: str, root: Path) -> list[dict[str, Any]]:
    from workbench.engine.regress.sources import open_tools, schemas_of

    async with open_tools(reference, root=root) as toolsets:
        return schemas_of(toolsets)
