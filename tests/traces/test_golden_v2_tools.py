"""The schema v2 golden traces of tool sets (renamed, dropped and changed tools) load through
the reader, the tree and the store, and keep what v2 added."""

from __future__ import annotations

import json
from pathlib import Path

from traces.events import SCHEMA_VERSION, RunStart, ToolsChanged, ToolStart
from traces.reader import read_trace
from traces.store import TraceStore
from traces.tree import build_chain
from traces.versions import migrate

GOLDEN_V2 = Path(__file__).parents[1] / "fixtures" / "traces" / "v2"
TOOLS_RUN = GOLDEN_V2 / "5a0e2c7d9b8f4e21a3c6d0f1e2b4a6c8.jsonl"


def test_the_tools_golden_trace_reads_with_its_v2_fields() -> None:
    result = read_trace(TOOLS_RUN)
    assert result.problems == []
    events = result.events
    start = events[0]
    assert isinstance(start, RunStart) and start.schema_version == SCHEMA_VERSION
    assert start.renamed_tools == {"fs__read_file": "read_file", "fs__search_files": "search_files"}
    assert len(start.tools) == 16 and len(start.tools_dropped) == 11
    [renamed] = [e for e in events if isinstance(e, ToolStart) and e.source_name]
    assert (renamed.name, renamed.source, renamed.source_name) == (
        "fs__read_file", "mcp:fs", "read_file",
    )  # fmt: skip
    [changed] = [e for e in events if isinstance(e, ToolsChanged)]
    assert (changed.source, changed.added, changed.removed) == ("mcp:fault", ["extra"], [])
    chain = build_chain(events)
    assert chain.status == "completed" and len(chain.turns) == 4
    # Every line read back writes out the same JSON as it migrates to: nothing lost or added
    # on the way.
    lines = TOOLS_RUN.read_text(encoding="utf-8").splitlines()
    expected = [migrate(json.loads(x), 2) for x in lines]
    assert [json.loads(e.model_dump_json()) for e in events] == expected


def test_the_v2_golden_traces_ingest(tmp_path: Path) -> None:
    with TraceStore.open(tmp_path / "w.duckdb") as store:
        report = store.ingest([GOLDEN_V2])
        traces = GOLDEN_V2.glob("*.jsonl")
        assert report.new_events == sum(len(read_trace(path).events) for path in traces)
        [run] = [r for r in store.runs() if r.run_id == TOOLS_RUN.stem]
        assert run.status == "completed"
        assert build_chain(store.events(run.run_id)).status == "completed"
