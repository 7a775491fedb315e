"""The schema v3 golden traces — a Responses API run and an Anthropic Messages run, each
recorded by the proxy from the real SDK — load through the reader, the tree and the store,
and keep what v3 added: each model call's wire format and its exact body."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from traces.events import SCHEMA_VERSION, ModelChunk, ModelRequest, RunStart, ToolEnd
from traces.reader import read_trace
from traces.store import TraceStore
from traces.tree import build_chain

GOLDEN_V3 = Path(__file__).parents[1] / "fixtures" / "traces" / "v3"
TRACES = sorted(GOLDEN_V3.glob("*.jsonl"))


def api_of(path: Path) -> str:
    requests = [e for e in read_trace(path).events if isinstance(e, ModelRequest)]
    return requests[0].api


@pytest.mark.parametrize("path", TRACES, ids=api_of)
def test_a_v3_golden_trace_reads_with_its_wire_format(path: Path) -> None:
    result = read_trace(path)
    assert result.problems == []
    events = result.events
    start = events[0]
    assert isinstance(start, RunStart) and start.schema_version == SCHEMA_VERSION == 3
    assert start.origin == "captured"
    requests = [e for e in events if isinstance(e, ModelRequest)]
    assert len(requests) == 2 and {r.api for r in requests} == {api_of(path)} != {"chat"}
    assert all(r.body is not None and r.stream for r in requests)
    # The normalized messages say in chat words what the body says in its own.
    assert requests[0].messages[0] == {"role": "system", "content": "You are a careful agent."}
    assert requests[1].messages[-1]["role"] == "tool"
    [observed] = [e for e in events if isinstance(e, ToolEnd)]
    assert observed.observed and observed.ok
    chunks = [e for e in events if isinstance(e, ModelChunk)]
    assert all("type" in chunk.data for chunk in chunks)  # the wire's own events
    chain = build_chain(events)
    assert chain.status == "completed" and len(chain.turns) == 2
    # Every line read back writes out the same JSON: nothing lost or added on the way.
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(e.model_dump_json()) for e in events] == [json.loads(x) for x in lines]


def test_the_v3_golden_traces_ingest(tmp_path: Path) -> None:
    with TraceStore.open(tmp_path / "w.duckdb") as store:
        report = store.ingest([GOLDEN_V3])
        assert report.new_events == sum(len(read_trace(path).events) for path in TRACES)
        runs = store.runs()
        assert sorted(r.run_id for r in runs) == sorted(path.stem for path in TRACES)
        assert {r.status for r in runs} == {"completed"}


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_older_traces_read_as_chat_completions(version: str) -> None:
    folder = GOLDEN_V3.parent / version
    requests = [
        event
        for path in folder.glob("*.jsonl")
        for event in read_trace(path).events
        if isinstance(event, ModelRequest)
    ]
    assert requests and {(r.api, r.body) for r in requests} == {("chat", None)}
