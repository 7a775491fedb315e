"""`workbench compare`: N runs of one task side by side — the path the passing runs share,
and the first step where each other run left it, runs that left the same way as one
variant. The comparison is `workbench.engine.analysis.compare`'s; this module lays it out.

`diff` stays the two-run command (tool schemas and both chains turn by turn); `compare`
answers the N-run question, for 2 runs or thousands.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from workbench.cli.common import CliError, add_home, positive_int, print_json

if TYPE_CHECKING:
    from workbench.engine.analysis.compare import Departure, GroupComparison, Step, TextDiff

EXAMPLES_DEFAULT = 5
VARIANTS_DEFAULT = 10
TEXT_WIDTH = 100  # characters of a step's text on its line


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="N runs of one task side by side: where each left the passing runs' path",
        description=(
            "Aligns the runs step by step (each tool call by tool and arguments, each "
            "answer, error and end), finds the path the passing runs share (at each step, "
            "the one most of them took), and for every run that left it the first step "
            "where it did: another tool, other arguments, a tool error, another answer, a "
            "limit hit. Runs that left the same way at the same step are one variant, "
            "shown with its step beside the path's and word diffs of their texts. A "
            "regression sample passes when its case said so, any other run when it "
            "completed. Exit 0 when every run followed one path, 1 when some did not. "
            "(`workbench diff A B` compares two runs turn by turn, tool schemas too.)"
        ),
        epilog=(
            "examples:\n  workbench compare --task 3f2a\n  workbench compare r1 r2 r3\n"
            "  workbench compare --case demo:pick-read-file\n"
            "  workbench compare --run-name nightly --json | jq '.variants[0]'"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("runs", nargs="*", metavar="RUN", help="run ids or unique prefixes")
    parser.add_argument(
        "--task", metavar="RUN", help="every run of RUN's task (same system prompt, task, tools)"
    )
    parser.add_argument(
        "--case",
        metavar="SUITE:CASE",
        help="the samples of a suite case, in the suite's newest stored run (`workbench test`)",
    )
    parser.add_argument("--label", metavar="LABEL", help="the runs annotated with LABEL")
    parser.add_argument(
        "--run-name",
        metavar="NAME",
        help="the runs a proxy captured under the header X-Workbench-Run: NAME",
    )
    parser.add_argument(
        "--variants",
        type=positive_int,
        default=VARIANTS_DEFAULT,
        metavar="N",
        help=f"the N variants with most runs (default {VARIANTS_DEFAULT})",
    )
    parser.add_argument(
        "--examples",
        type=positive_int,
        default=EXAMPLES_DEFAULT,
        metavar="N",
        help=f"run ids per variant, the oldest (default {EXAMPLES_DEFAULT})",
    )
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    add_home(parser)
    parser.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from workbench.cli.read_cmds import open_store
    from workbench.engine.analysis.compare import compare_group
    from workbench.engine.analysis.groups import GroupError, group_of

    ways = [args.runs, args.task, args.case, args.label, args.run_name]
    if sum(bool(way) for way in ways) != 1:
        raise CliError("compare takes one group: RUN…, --task RUN, --case, --label or --run-name")
    with open_store(args) as store:
        try:
            group = group_of(
                store,
                runs=args.runs,
                task=args.task,
                case=args.case,
                label=args.label,
                name=args.run_name,
            )
            comparison = compare_group(store, group.run_ids, shown=args.variants)
        except GroupError as exc:
            raise CliError(str(exc)) from None
    if comparison.tasks > 1:
        print(
            f"workbench: note: these {comparison.runs} runs are of {comparison.tasks} different "
            "tasks (system prompt, task or tools differ); comparing them anyway",
            file=sys.stderr,
        )
    if args.json:
        print_json({"group": group.named} | comparison.to_json(args.examples))
    else:
        sys.stdout.write("\n".join(compare_lines(group.named, comparison, args.examples)) + "\n")
    return 1 if comparison.total_variants else 0


def compare_lines(named: str, comparison: GroupComparison, examples: int) -> list[str]:
    from traces.text import one_line

    runs = comparison.runs
    head = f"{runs} run{'s' if runs != 1 else ''} ({named}) · {comparison.passed} passed, "
    lines = [head + f"{comparison.failed} failed"]
    if comparison.task:
        lines.append(f"task: {one_line(comparison.task, TEXT_WIDTH)}")
    if runs == 1:
        return [*lines, "one run alone: nothing to compare it against"]
    who = comparison.who
    followed = len(comparison.on_path)
    if comparison.path_of == "passing":
        passed = comparison.passed
        lines += ["", f"the path of the {passed} passing run{'s' if passed != 1 else ''}"]
    else:
        lines += ["", "no run passed: the path most runs share"]
    lines[-1] += (
        f" ({followed} run{'s' if followed != 1 else ''} followed it to its end; "
        f"{comparison.on_path_failed} of them failed):"
    )
    lines += [line for step in comparison.path for line in _step_lines(step)]
    if not comparison.variants:
        return [*lines, "", "every run followed this path"]
    total = comparison.total_variants
    more = (
        f" (the {len(comparison.variants)} with most runs shown)"
        if total > len(comparison.variants)
        else ""
    )
    lines += ["", f"{total} way{'s' if total != 1 else ''} runs left it{more}:"]
    for variant in comparison.variants:
        lines += ["", f"• {variant.sentence(who)}"]
        lines += _departure_lines(variant.departure)
        shown = " ".join(run[:12] for run in variant.run_ids[:examples])
        rest = f" … and {variant.runs - examples} more" if variant.runs > examples else ""
        lines.append(f"    runs   {shown}{rest}")
    lines += ["", "`workbench show RUN` shows a run; `workbench diff A B` two runs turn by turn"]
    return lines


def _where(step: Step) -> str:
    turn = f", turn {step.turn}" if step.turn is not None else ""
    return f"step {step.position + 1}{turn}"


def _step_lines(step: Step, indent: str = "  ") -> list[str]:
    from traces.text import one_line

    lines = [f"{indent}{_where(step):<16}{step.label()}"]
    if step.text:
        lines.append(f"{indent}{'':<16}{one_line(step.text, TEXT_WIDTH)}")
    return lines


def _departure_lines(departure: Departure) -> list[str]:
    from traces.text import one_line

    lines = [f"    at {_where(departure.step)}"]
    if departure.expected is not None:
        lines.append(f"    path   {departure.expected.label()}")
    lines.append(f"    here   {departure.step.label()}")
    for diff in departure.diffs:
        lines.append(f"    {diff.what}: {_marked(diff)}")
    if not departure.diffs and departure.step.text:
        lines.append(f"           {one_line(departure.step.text, TEXT_WIDTH)}")
    return lines


def _marked(diff: TextDiff) -> str:
    from traces.text import one_line
    from workbench.engine.diff.text_changes import marked

    return one_line(marked(diff.spans), 2 * TEXT_WIDTH)
