"""What ingest asks of memory: DuckDB's memory limit is lowered while ingesting and set back
after, and a line longer than DuckDB's reader takes by default (16 MiB) is still read."""

from __future__ import annotations

from pathlib import Path

from tests.support.generated_runs import run_with_big_result, small_run
from traces.events import ToolEnd
from traces.home import traces_dir
from traces.store import TraceStore
from traces.store.ingest import INGEST_MEMORY_LIMIT

MIB = 1 << 20
UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": MIB, "GiB": 1 << 30, "TiB": 1 << 40}


def memory_limit(store: TraceStore) -> str:
    _, rows = store.query("SELECT current_setting('memory_limit')")
    return str(rows[0][0])


def in_bytes(shown: str) -> float:
    number, unit = shown.split(" ")
    return float(number) * UNITS[unit]


def test_the_memory_limit_is_lowered_while_ingesting_then_set_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    small_run(traces_dir(home), "run-a")
    with TraceStore.for_home(home) as store:
        before = memory_limit(store)
        during: list[str] = []
        report = store.ingest_home(home, lambda what, done: during.append(memory_limit(store)))
        assert report.new_runs == 1 and during
        # Never raised: the limit is DuckDB's own default when that is lower.
        expected = min(in_bytes(before), INGEST_MEMORY_LIMIT)
        assert {in_bytes(shown) for shown in during} == {expected}
        assert memory_limit(store) == before

        # A limit set lower than the ingest's is left as it is, and so is one set higher.
        for limit in ("200.0 MiB", "3.0 GiB"):
            store.query(f"SET memory_limit = '{limit}'")
            during.clear()
            small_run(traces_dir(home), f"run-{limit[0]}")
            store.ingest_home(home, lambda what, done: during.append(memory_limit(store)))
            assert in_bytes(during[0]) == min(in_bytes(limit), INGEST_MEMORY_LIMIT)
            assert memory_limit(store) == limit


def test_a_line_longer_than_duckdbs_default_object_size_is_read(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = "0123456789abcdef" * (17 * MIB // 16)  # 17 MiB
    trace = run_with_big_result(traces_dir(home), "run-big", len(result))
    assert max(len(line) for line in trace.read_bytes().splitlines()) > 16 * MIB
    with TraceStore.for_home(home) as store:
        report = store.ingest_home(home)
        assert (report.new_events, report.problems) == (4, [])
        assert store.run("run-big").status == "completed"
        end = store.events("run-big", types=["tool_end"])[0]
        assert isinstance(end, ToolEnd) and end.result == result


def test_what_the_proxy_accepts_the_store_stores(tmp_path: Path) -> None:
    """A capture of a 30 MB request (under the proxy's 32 MB limit: its run_start and its
    request each hold it) and one of a 60 MB answer (its chunk, its response and its
    run_end each hold that), made through the real proxy: every event is stored and each
    run is listed, within the ingest's memory limit."""
    import base64
    import os

    import openai

    from workbench.engine.http.model_server import ModelServer, ScriptResponder
    from workbench.engine.http.proxy import RecordingProxy

    home = tmp_path / "home"
    request = base64.b64encode(os.urandom(30 * MIB * 3 // 4)).decode()
    answer = base64.b64encode(os.urandom(60 * MIB * 3 // 4)).decode()
    steps = [{"content": "ok"}, {"content": answer}]
    with (
        ModelServer(ScriptResponder(steps, model="m")) as upstream,
        RecordingProxy(upstream.base_url, home) as proxy,
    ):
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        for content in (request, "hi"):
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": content}], stream=False
            )
    with TraceStore.for_home(home) as store:
        report = store.ingest_home(home)
        assert report.problems == []
        listed = {(row.task or "")[:10]: row for row in store.runs()}
        assert set(listed) == {request[:10], "hi"}
        for row in listed.values():
            assert row.status == "completed"
            assert store.count_events(row.run_id) == 5  # start, request, chunk, response, end
        assert listed["hi"].final_answer == answer
