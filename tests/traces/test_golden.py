"""Every test run loads every golden trace, through the reader, the tree and the store."""

from __future__ import annotations

from pathlib import Path

from traces.events import RUN_STATUSES
from traces.reader import read_trace
from traces.store import TraceStore
from traces.tree import build_chain


def test_every_golden_trace_reads_and_builds_a_chain(golden_dir: Path) -> None:
    statuses = []
    for path in sorted(golden_dir.glob("*.jsonl")):
        result = read_trace(path)
        assert result.problems == [], result.problems
        assert [e.seq for e in result.events] == list(range(len(result.events)))
        chain = build_chain(result.events)
        assert chain.start is not None and chain.turns
        statuses.append(chain.status)
    assert sorted(statuses) == sorted(RUN_STATUSES)


def test_golden_traces_cover_the_interesting_events(golden_dir: Path) -> None:
    seen: set[str] = set()
    retried = False
    for path in golden_dir.glob("*.jsonl"):
        chain = build_chain(read_trace(path).events)
        seen |= {e.type for turn in chain.turns for e in turn.events}
        retried |= any(len(turn.model_calls) > 1 for turn in chain.turns)
    assert {"model_chunk", "mcp_message", "history_trimmed", "error", "tool_end"} <= seen
    assert retried


def test_golden_traces_ingest_with_one_run_per_status(golden_dir: Path, tmp_path: Path) -> None:
    with TraceStore.open(tmp_path / "w.duckdb") as store:
        report = store.ingest([golden_dir])
        runs = store.runs()
        assert sorted(run.status for run in runs) == sorted(RUN_STATUSES)
        total = sum(len(read_trace(p).events) for p in golden_dir.glob("*.jsonl"))
        assert report.new_events == total
        for run in runs:
            events = store.events(run.run_id)
            assert build_chain(events).status == run.status
