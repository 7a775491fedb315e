"""`workbench import …`: bring runs recorded elsewhere into the home.

Each kind of source is one subcommand whose handler lives with its own code:
`import bundle FILE` (a `workbench bundle` file) in `workbench.cli.bundle_cmds`.
"""

from __future__ import annotations

from typing import Any

from workbench.cli import bundle_cmds


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "import",
        help="add runs recorded elsewhere to the home (a bundle, …)",
        description="Add runs recorded elsewhere to the home folder.",
    )
    kinds = parser.add_subparsers(dest="import_kind", metavar="KIND", required=True)
    bundle_cmds.register_import(kinds)
