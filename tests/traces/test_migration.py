"""v1 traces migrate to the current schema: every line still validates, and a v1 run_start
learns where the run came from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from traces.events import SCHEMA_VERSION, SCHEMA_VERSIONS, RunStart
from traces.reader import read_trace
from traces.store import TraceStore
from traces.versions import MIGRATIONS, check_versions, migrate


def _v1_start(**fields: object) -> dict[str, object]:
    return {
        "run_id": "r1",
        "seq": 0,
        "ts": "2026-11-30T03:28:29.545331Z",
        "turn": None,
        "type": "run_start",
        "schema_version": 1,
        "task": "t",
        "model": "m",
        **fields,
    }


def test_every_older_version_has_a_migration_and_a_description() -> None:
    assert set(SCHEMA_VERSIONS) == set(range(1, SCHEMA_VERSION + 1))
    assert set(MIGRATIONS) == set(range(1, SCHEMA_VERSION))


def test_a_v1_run_start_learns_its_origin_from_what_v1_kept() -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "agent"),
        ({"parent_run_id": "p", "fork_turn": 2}, "fork"),
        ({"meta": {"regress": {"suite": "s"}}, "parent_run_id": "p"}, "regression_sample"),
        ({"meta": {"mcp_config": "servers.json"}, "model": "none"}, "mcp_session"),
    ]
    for fields, origin in cases:
        start = RunStart.model_validate(migrate(_v1_start(**fields), 1))
        assert (start.origin, start.schema_version) == (origin, SCHEMA_VERSION)


def test_v1_golden_traces_read_as_the_current_schema(golden_dir: Path) -> None:
    for path in sorted(golden_dir.glob("*.jsonl")):
        result = read_trace(path)
        assert result.problems == [] and result.schema_version == 1
        start = result.events[0]
        assert isinstance(start, RunStart)
        expected = "fork" if start.parent_run_id else "agent"
        assert start.origin == expected


def test_the_store_keeps_each_runs_origin(golden_dir: Path, tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    for path in golden_dir.glob("*.jsonl"):
        (traces / path.name).write_bytes(path.read_bytes())
    sample = _v1_start(run_id="s1", meta={"regress": {"suite": "s"}})
    (traces / "s1.jsonl").write_text(json.dumps(sample) + "\n")
    with TraceStore.open(tmp_path / "w.duckdb") as store:
        store.ingest([traces])
        origins = {run.run_id: run.origin for run in store.runs()}
    forks = {
        path.stem
        for path in golden_dir.glob("*.jsonl")
        if json.loads(path.read_text().splitlines()[0]).get("parent_run_id")
    }
    assert origins["s1"] == "regression_sample"
    assert {run_id for run_id, origin in origins.items() if origin == "fork"} == forks
    assert set(origins.values()) <= {"agent", "fork", "regression_sample"}


def test_a_schema_bump_without_its_migration_or_summary_fails_at_import(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    check_versions()
    monkeypatch.delitem(MIGRATIONS, SCHEMA_VERSION - 1)
    with pytest.raises(RuntimeError, match="MIGRATIONS"):
        check_versions()
    monkeypatch.setitem(MIGRATIONS, SCHEMA_VERSION - 1, lambda record: record)
    monkeypatch.delitem(SCHEMA_VERSIONS, SCHEMA_VERSION)
    with pytest.raises(RuntimeError, match="SCHEMA_VERSIONS"):
        check_versions()
