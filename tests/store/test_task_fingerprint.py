"""Runs of one task share a task fingerprint (issue 38, part 1), stored at ingest: the
system prompt, the task and the names of the tools offered, in any order, and nothing else
(not the model, not the tools' descriptions, not how the run went)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from tests.support.failing_runs import failing_run
from tests.support.processes import workbench_at
from traces.store import TraceStore

AT = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def _fingerprints(home: Path) -> dict[str, str | None]:
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        return {row.run_id: row.task_fingerprint for row in store.runs(limit=100)}


def test_runs_of_one_task_share_a_fingerprint_and_other_tasks_do_not(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    failing_run(folder, "a" * 32, at=AT)
    # Same system prompt, task and tool names; another model, other descriptions, other end.
    failing_run(
        folder,
        "b" * 32,
        at=AT,
        model="model-b",
        status="completed",
        reason="done",
        descriptions={"read_file": "reads a file (v2)"},
    )
    failing_run(folder, "c" * 32, at=AT, system_prompt="You read files carefully.")
    failing_run(folder, "d" * 32, at=AT, task="read the units twice")
    prints = _fingerprints(tmp_path)
    assert prints["a" * 32] == prints["b" * 32]
    assert prints["a" * 32] is not None and len(prints["a" * 32] or "") == 16
    assert len({prints["a" * 32], prints["c" * 32], prints["d" * 32]}) == 3


def test_the_fingerprint_is_in_runs_json(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    failing_run(folder, "e" * 32, at=AT)
    done = workbench_at(tmp_path, "runs", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    rows = rows["runs"] if isinstance(rows, dict) else rows
    assert rows[0]["task_fingerprint"] == _fingerprints(tmp_path)["e" * 32]
