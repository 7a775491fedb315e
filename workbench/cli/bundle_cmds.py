"""`workbench bundle RUN… -o FILE`, `workbench import bundle FILE`, and opening a bundle
directly: `workbench show FILE`, `replay FILE`, `diff FILE`, `workbench FILE` (the TUI).

A bundle opened directly is imported into a throwaway home (`opened_bundle`), which the
command then reads as it reads any home; the bundle's runs stand in for the run arguments.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.cli.common import CliError, add_home, print_json, resolve_home

# As `workbench.engine.recording.runs.bundle` has them; not imported from there, since every
# start asks `looks_like_bundle` and the engine loads the agent and pydantic.
SUFFIX = ".wbundle"
_XZ_MAGIC = b"\xfd7zXZ\x00"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bundle",
        help="write runs (with their fork parents) to one file that replays anywhere",
        description=(
            "Write one compressed file holding the runs' traces, their fork parents, tool "
            "schemas, MCP frames, the model script of an offline fork and a manifest "
            "(versions, what was redacted). `workbench show|replay|diff FILE` and "
            "`workbench FILE` open it directly; `workbench import bundle FILE` adds it to "
            "a home."
        ),
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run ids, prefixes or .jsonl")
    parser.add_argument(
        "-o", "--output", required=True, type=Path, metavar="FILE", help=f"bundle file ({SUFFIX})"
    )
    parser.add_argument("--json", action="store_true", help="print the manifest as JSON")
    add_home(parser)
    parser.set_defaults(func=cmd_bundle)


def register_import(kinds: Any) -> None:
    parser = kinds.add_parser(
        "bundle",
        help="add the runs of a `workbench bundle` file to the home",
        description="Check a bundle (it is untrusted input) and add its runs to the home.",
    )
    parser.add_argument("file", type=Path, help="the bundle file")
    parser.add_argument("--json", action="store_true", help="print what was added as JSON")
    add_home(parser)
    parser.set_defaults(func=cmd_import_bundle)


def looks_like_bundle(ref: str) -> bool:
    """Whether a command-line argument names a bundle (its suffix, or an xz file that is
    not a trace); cheap enough for every start."""
    from traces.user_files import names_a_file

    path = Path(ref)
    if path.suffix == SUFFIX:
        return True
    if path.suffix == ".jsonl" or not names_a_file(path):
        return False
    try:
        with path.open("rb") as handle:
            return handle.read(len(_XZ_MAGIC)) == _XZ_MAGIC
    except OSError:
        return False


def tui_bundle(argv: list[str]) -> str | None:
    """The bundle of `workbench [--home DIR] FILE`, else None."""
    if not argv or not looks_like_bundle(argv[-1]):
        return None
    rest = argv[:-1]
    while rest[:1] == ["--home"] and len(rest) >= 2:
        rest = rest[2:]
    rest = [arg for arg in rest if not arg.startswith("--home=")]
    return argv[-1] if not rest else None


def _bundle_error(exc: Exception, path: Path) -> CliError:
    return CliError(f"bundle {path}: {exc}", 2)


def cmd_bundle(args: argparse.Namespace) -> int:
    from workbench.engine.recording.runs.bundle import BundledTrace, BundleError, write_bundle
    from workbench.engine.recording.runs.load import RecordingError, trace_path

    home = resolve_home(args)
    out: Path = args.output
    try:
        traces = [BundledTrace.at(trace_path(ref, home)) for ref in args.runs]
    except RecordingError as exc:
        raise CliError(str(exc)) from None
    try:
        manifest = write_bundle(traces, home, out)
    except BundleError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print_json(manifest.to_json() | {"path": str(out), "bytes": out.stat().st_size})
        return 0
    size = out.stat().st_size
    parents = f" and {len(manifest.parents)} fork parent(s)" if manifest.parents else ""
    print(f"bundle {out}: {len(manifest.runs)} run(s){parents}, {size / 1024:.1f} KiB")
    kinds = manifest.redacted.get("placeholders") or {}
    shown = ", ".join(f"{kind} ×{count}" for kind, count in kinds.items()) or "none found"
    patterns = manifest.redacted.get("home_patterns", 0)
    print(f"  redacted: {shown}; the home's {patterns} pattern(s) applied again")
    if manifest.annotations:
        print(f"  {manifest.annotations} annotation record(s) on these runs included")
    for run_id in manifest.scripts:
        print(f"  model script of the offline fork of run {run_id[:12]} included")
    for run_id in manifest.missing_parents:
        print(f"  note: fork parent {run_id[:12]} is not in this home; not included")
    for run_id in manifest.scripts_left_out:
        print(f"  note: the model script of run {run_id[:12]} is outside the home; not included")
    return 0


def cmd_import_bundle(args: argparse.Namespace) -> int:
    from workbench.cli.common import writable_home
    from workbench.engine.recording.runs.bundle import BundleError
    from workbench.engine.recording.runs.bundle_import import import_bundle

    home = resolve_home(args)
    try:
        home = writable_home(home)
        report = import_bundle(args.file, home)
    except BundleError as exc:
        raise _bundle_error(exc, args.file) from None
    except OSError as exc:
        raise CliError(f"cannot import into {home}: {exc.strerror or exc}") from None
    if args.json:
        print_json(
            {"home": str(home), "added": report.added, "already": report.already,
             "runs": report.runs, "parents": report.parents,
             "annotations": report.annotations, "authors": report.authors}
        )  # fmt: skip
        return 0
    print(
        f"imported {len(report.added)} run(s) into {home}"
        + (f" ({len(report.already)} already there)" if report.already else "")
    )
    if report.annotations:
        print(f"  {report.annotations} annotation record(s) by {', '.join(report.authors)}")
    # Every run the count speaks of, the fork parents that came along included.
    for run_id in [*report.runs, *report.parents]:
        role = " (fork parent)" if run_id in report.parents else ""
        there = " (already there)" if run_id in report.already else ""
        print(f"  {run_id}{role}{there}")
    return 0


def on_bundles(
    args: argparse.Namespace, handler: Callable[[argparse.Namespace], int], *fields: str
) -> int | None:
    """Run `handler` with every bundle named by `fields` of `args` opened in a throwaway
    home, each bundle argument replaced by its run; None when no field names a bundle.
    A bundle of several runs runs the handler once per run (the worst exit code wins)."""
    refs = {name: getattr(args, name, None) for name in fields}
    bundles = {name: Path(ref) for name, ref in refs.items() if ref and looks_like_bundle(ref)}
    if not bundles:
        return None
    from workbench.engine.recording.runs.bundle import BundleError
    from workbench.engine.recording.runs.bundle_import import import_bundle, opened_bundle

    first = next(iter(bundles.values()))
    try:
        with opened_bundle(first) as (home, report):
            runs = {first: report}
            for path in bundles.values():
                if path not in runs:
                    runs[path] = import_bundle(path, home)
            args.home = str(home)
            return _dispatch(args, handler, fields, bundles, runs)
    except BundleError as exc:
        raise _bundle_error(exc, next(iter(bundles.values()))) from None


def _dispatch(
    args: argparse.Namespace,
    handler: Callable[[argparse.Namespace], int],
    fields: tuple[str, ...],
    bundles: dict[str, Path],
    runs: dict[Path, Any],
) -> int:
    if len(fields) == 2:  # diff A [B]: two runs, from one bundle or two
        a, b = fields
        if getattr(args, b, None) is None:
            report = runs[bundles[a]]
            pair = report.runs[:2] if len(report.runs) > 1 else [*report.parents[-1:], *report.runs]
            if len(pair) != 2:
                raise CliError("the bundle holds one run and no fork parent; name a second run")
            setattr(args, a, pair[0])
            setattr(args, b, pair[1])
            return handler(args)
        for name, path in bundles.items():
            setattr(args, name, runs[path].runs[0])
        return handler(args)
    (name,) = fields
    worst = 0
    for run_id in runs[bundles[name]].runs:
        setattr(args, name, run_id)
        worst = max(worst, int(handler(args) or 0))
        sys.stdout.flush()
    return worst


def open_tui(path: Path) -> int:
    """`workbench FILE`: the TUI on a throwaway home holding the bundle's runs."""
    from workbench.cli import main
    from workbench.engine.recording.runs.bundle import BundleError
    from workbench.engine.recording.runs.bundle_import import opened_bundle

    try:
        with opened_bundle(path) as (home, _report):
            return main(["--home", str(home), "tui"])
    except BundleError as exc:
        print(f"workbench: {_bundle_error(exc, path)}", file=sys.stderr)
        return 2
