"""Where the workbench keeps its files: `$WORKBENCH_HOME`, else `./.workbench`."""

from __future__ import annotations

import os
from pathlib import Path


def home_dir(override: str | Path | None = None) -> Path:
    if override:
        return Path(override)
    return Path(os.environ.get("WORKBENCH_HOME") or ".workbench")


def traces_dir(home: Path) -> Path:
    return home / "traces"


def db_path(home: Path) -> Path:
    return home / "workbench.duckdb"
