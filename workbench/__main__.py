"""`python -m workbench`: the `workbench` command, for a process that has the interpreter but
not the script (`workbench web` starts the TUI it serves so)."""

import sys

from workbench.cli import main

sys.exit(main())
