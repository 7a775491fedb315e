"""Traces whose run ids are hostile: a golden trace with its run id replaced everywhere."""

from __future__ import annotations

import json
from pathlib import Path

GOLDEN_V1 = Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "v1"
COMPLETED = "276a0272c8a551178d8bfedb26070002"

# A run id that would climb out of any folder it is joined to.
CLIMBING = "../../x/pwned"


def write_renamed(
    folder: Path, run_id: str, name: str = "renamed", source: str = COMPLETED
) -> Path:
    """The golden trace `source` as `<folder>/<name>.jsonl`, every line naming `run_id`."""
    lines = (GOLDEN_V1 / f"{source}.jsonl").read_text(encoding="utf-8").splitlines()
    renamed = [json.dumps(json.loads(line) | {"run_id": run_id}) for line in lines]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    path.write_text("".join(line + "\n" for line in renamed), encoding="utf-8")
    return path
