"""Listing runs by kind, by a set of run ids, and sorted by any column, in DuckDB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.golden import GOLDEN, golden_traces_in
from traces.store import TraceStore


@pytest.fixture
def store(tmp_path: Path) -> TraceStore:
    traces = golden_traces_in(tmp_path / "traces")
    # One of them a regression sample: the v2 origin says where a run came from.
    sample = traces / "aebcfee64292505baee318065362e2e4.jsonl"
    lines = sample.read_text().splitlines()
    start = json.loads(lines[0]) | {"schema_version": 2, "origin": "regression_sample"}
    sample.write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n")
    opened = TraceStore.open(tmp_path / "store.duckdb")
    opened.ingest([traces])
    return opened


def test_runs_of_some_kinds_only(store: TraceStore) -> None:
    samples = store.runs(origins=["regression_sample"])
    assert [run.run_id for run in samples] == ["aebcfee64292505baee318065362e2e4"]
    assert store.count_runs(failed_only=True, origins=["agent", "fork"]) == 6
    # A failing sample is a failure only where the kinds asked for name samples.
    assert store.count_runs(failed_only=True) == 6
    assert store.count_runs(failed_only=True, origins=["regression_sample"]) == 1


def test_runs_among_given_ids(store: TraceStore) -> None:
    wanted = ["276a0272c8a551178d8bfedb26070002", "ef47ea9fac8e53a683b951af3c16bc2f"]
    assert sorted(run.run_id for run in store.runs(run_ids=wanted)) == wanted
    assert store.count_runs(run_ids=[]) == 0


def test_runs_sorted_by_any_column(store: TraceStore) -> None:
    by_tokens = [run.total_tokens for run in store.runs(sort="total_tokens", descending=False)]
    assert by_tokens == sorted(by_tokens)
    by_task = [run.task or "" for run in store.runs(sort="task", descending=True)]
    assert by_task == sorted(by_task, reverse=True)
    with pytest.raises(ValueError, match="cannot sort"):
        store.runs(sort="task; DROP TABLE runs")


def test_failed_is_one_rule_over_every_kind(tmp_path: Path) -> None:
    """Forks, captured runs and the rest fail like agent runs; a sample only when samples are
    asked for, and never once its case recorded it as passed."""
    traces = tmp_path / "traces"
    traces.mkdir()
    failing = [p for p in GOLDEN.glob("*.jsonl") if '"status":"completed"' not in p.read_text()]
    kinds = ["fork", "captured", "regression_sample", "mcp_session", "imported"]
    for trace, kind in zip(failing, kinds, strict=False):
        lines = trace.read_text().splitlines()
        start = json.loads(lines[0]) | {"schema_version": 2, "origin": kind}
        (traces / trace.name).write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n")
    with TraceStore.open(tmp_path / "store.duckdb") as store:
        store.ingest([traces])
        failed = {run.origin for run in store.runs(failed_only=True)}
        assert failed == {"fork", "captured", "mcp_session", "imported"}
        [sample] = store.runs(failed_only=True, origins=["regression_sample"])
        store.query(
            "INSERT INTO regress_samples VALUES ('s', 'c', 1, ?, true, '', '', '', '')",
            [sample.run_id],
        )
        assert store.runs(failed_only=True, origins=["regression_sample"]) == []
        assert store.count_runs(origins=["regression_sample"]) == 1  # still listed


@pytest.mark.parametrize("sort", [None, "task", "total_tokens", "parent_run_id"])
@pytest.mark.parametrize("descending", [True, False])
def test_a_page_far_down_is_the_same_read_from_the_other_end(
    sort: str | None, descending: bool
) -> None:
    # Ties, NULLs and all: the reversed order is the same order, read backwards.
    store = TraceStore.open(":memory:")
    store.query(
        "INSERT INTO runs (run_id, started_at, task, total_tokens, parent_run_id, status) "
        "SELECT printf('%05d', i), CASE WHEN i % 7 = 0 THEN NULL "
        "ELSE TIMESTAMPTZ '2026-01-01' + to_seconds(i % 50) END, "
        "CASE WHEN i % 5 = 0 THEN NULL ELSE 'task ' || (i % 3) END, i % 4, "
        "CASE WHEN i % 2 = 0 THEN 'p' END, 'completed' FROM range(12000) t(i)"
    )
    whole = [row.run_id for row in store.runs(limit=12000, sort=sort, descending=descending)]
    for offset in (10_001, 11_990, 11_999, 12_000):
        page = store.runs(limit=25, offset=offset, sort=sort, descending=descending)
        assert [row.run_id for row in page] == whole[offset : offset + 25]
