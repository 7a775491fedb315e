"""A home whose runs spread over days and models, for the figures of `workbench stats` and
the TUI's overview: the golden traces, each moved back 0, 1 or 2 days and the first three
put on another model (every timestamp and the model rewritten; nothing else)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

from tests.support.golden import GOLDEN

OTHER_MODEL = "big-model"
PRICES = (
    '[models."gpt-4o-mini-2024-07-18"]\ninput = 0.15\noutput = 0.60\n'
    f'[models."{OTHER_MODEL}"]\ninput = 3.0\noutput = 15.0\n'
)


def _shifted(value: str, days: int) -> str:
    when = datetime.fromisoformat(value.replace("Z", "+00:00")) - timedelta(days=days)
    return when.isoformat().replace("+00:00", "Z")


def spread_runs(home: Path, *, priced: bool = True) -> Path:
    (home / "traces").mkdir(parents=True, exist_ok=True)
    for index, trace in enumerate(sorted(GOLDEN.glob("*.jsonl"))):
        lines = []
        for line in trace.read_text().splitlines(keepends=True):
            try:
                event = json.loads(line)
            except ValueError:  # the incomplete golden run's cut-off last line, kept
                lines.append(line)
                continue
            event["ts"] = _shifted(event["ts"], index % 3)
            if event["type"] == "run_start" and index < 3:
                event["model"] = OTHER_MODEL
            lines.append(json.dumps(event) + ("\n" if line.endswith("\n") else ""))
        (home / "traces" / trace.name).write_text("".join(lines))
    if priced:
        (home / "prices.toml").write_text(PRICES)
    return home
