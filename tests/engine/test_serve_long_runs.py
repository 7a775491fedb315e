"""serve-model over a long run: its turns are read as they are asked for, never held whole."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.big_traces import long_agent_run
from traces.home import traces_dir
from traces.store import TraceStore
from workbench.engine.http.serve import replay_server


def _asked(path: Path) -> Iterator[tuple[dict[str, Any], str | None]]:
    """Each recorded request as a client sends it, and the text it was answered with, read
    from the trace a line at a time (the test holds no more of the run than the server)."""
    request: dict[str, Any] | None = None
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            if event["type"] == "model_request":
                request = {"model": "m", "messages": event["messages"], "tools": event["tools"]}
                request |= event["params"]
            elif event["type"] == "model_response" and request is not None:
                yield request, event["message"].get("content")
                request = None


def _serve_every_turn(path: Path, home: Path, ref: str | None = None) -> tuple[int, dict[str, Any]]:
    """Serve the run of the trace at `path` (named by `ref`, else by the path), ask it every
    recorded request in order (each answered as recorded), then one it never recorded; how
    many were asked and the 409's error."""
    server = replay_server([ref or path], home)
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    try:
        asked = 0
        last: dict[str, Any] = {}
        for request, text in _asked(path):
            answer = client.chat.completions.create(**request)
            assert answer.choices[0].message.content == text
            asked += 1
            last = request
        changed = json.loads(json.dumps(last))
        changed["messages"][-1]["content"] = "a result never recorded"
        with pytest.raises(openai.ConflictError) as refused:
            client.chat.completions.create(**changed)
        body = refused.value.body
        assert isinstance(body, dict)
        return asked, body.get("error", body)
    finally:
        client.close()
        server.close()


def test_serve_model_serves_a_long_run_in_the_memory_of_a_short_one(tmp_path: Path) -> None:
    """The server indexes a run's requests in one pass and reads each turn's answer from the
    trace when a request matches it: a run four times as long takes a tenth of its extra
    bytes more (the index), where read whole it took some ten times its bytes (0.7-0.9 GB
    for the 200,000 events of bench/scale.py's long run). Every turn is still answered as
    recorded, and a request it never recorded still gets the 409 naming the closest turn."""
    home = tmp_path / "home"
    peaks: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for turns in (60, 240):
        path = long_agent_run(tmp_path, f"{turns:032d}", turns, 20, context_window=2000)
        if turns == 60:
            _serve_every_turn(path, home)  # imports and caches, unmeasured
        tracemalloc.start()
        try:
            asked, refused = _serve_every_turn(path, home)
            peaks[turns] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert asked == turns
        assert (refused["type"], refused["run_id"]) == ("replay_mismatch", f"{turns:032d}")
        assert refused["turn"] == turns and refused["diffs"], refused
        sizes[turns] = path.stat().st_size
    assert peaks[240] - peaks[60] < (sizes[240] - sizes[60]) / 10, (peaks, sizes)


def test_serve_model_serves_a_run_only_the_store_holds_as_from_its_trace(tmp_path: Path) -> None:
    """serve-model --replay RUN of a run the store holds, its trace file removed since,
    answers every recorded request as recorded and refuses one it never recorded with the
    409 its trace gave, where it stopped at the missing file."""
    home = tmp_path / "home"
    run_id = "5" * 32
    path = long_agent_run(traces_dir(home), run_id, 6, 20, context_window=2000)
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
    from_trace = _serve_every_turn(path, home, ref=run_id[:8])
    kept = path.replace(tmp_path / "kept.jsonl")  # the store alone holds the run now
    from_store = _serve_every_turn(kept, home, ref=run_id[:8])
    assert from_store == from_trace
    assert from_trace[0] == 6 and from_trace[1]["type"] == "replay_mismatch", from_trace
