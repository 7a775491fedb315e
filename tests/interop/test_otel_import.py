"""`workbench collect` and `workbench ingest-otel`: spans become runs in the trace contract.

The round trip sends the golden runs through `export-otel` into a real receiver and checks
the decision chain survives; other tests feed GenAI-convention spans written by hand (an
OTLP JSON file as the collector's file exporter writes it) and bad payloads.
"""

from __future__ import annotations

import gzip
import json
import signal
import socket
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.interop.conftest import RecordingReceiver
from tests.support.processes import workbench_process
from traces.events import RunStart
from traces.reader import read_trace
from traces.tree import build_chain
from workbench.cli import main

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")

from workbench.engine.otel.collect import Collector
from workbench.engine.otel.export import SPAN_EVENT_TYPES

FIXTURES = Path(__file__).parent / "fixtures"


def decisions(events: list[Any]) -> dict[str, Any]:
    """What a run decided: per turn the attempts, the messages sent, the answer and the
    tool calls with their arguments and results; and how the run ended."""
    chain = build_chain(events)
    assert chain.start is not None
    return {
        "task": chain.start.task,
        "model": chain.start.model,
        "system_prompt": chain.start.system_prompt,
        "status": chain.status,
        "final_answer": chain.end.final_answer if chain.end else None,
        "turns": [
            {
                "turn": turn.turn,
                "attempts": [(call.attempt, call.status) for call in turn.model_calls],
                "messages": turn.request.messages if turn.request else None,
                "tools_offered": turn.request.tools if turn.request else None,
                "answer": turn.response.message if turn.response else None,
                "finish_reason": turn.response.finish_reason if turn.response else None,
                "usage": turn.response.usage if turn.response else None,
                "tool_calls": [
                    (
                        call.call_id,
                        call.name,
                        call.start.arguments_raw,
                        call.arguments,
                        call.status,
                        call.end.result if call.end else None,
                        call.end.observed if call.end else None,
                    )
                    for call in turn.tool_calls
                ],
            }
            for turn in chain.turns
        ],
    }


def test_export_then_collect_gives_back_the_same_decision_chain(
    golden_home: Path, golden_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "teammate"
    with Collector(other) as collector:
        assert main(["export-otel", "--all", "--endpoint", collector.endpoint]) == 0
        runs = collector.wait_for_runs(8)
    assert len(runs) == 8 and all(run.written for run in runs)
    imported = {}
    for run in runs:
        events = read_trace(run.path).events
        start = events[0]
        assert isinstance(start, RunStart)
        assert start.origin == "imported" and start.client == "agent-workbench 0.1.0"
        imported[start.meta["otel"]["run_id"]] = events
    spanned = set(SPAN_EVENT_TYPES)
    for path in golden_dir.glob("*.jsonl"):
        original = read_trace(path).events
        copy = imported[original[0].run_id]
        assert decisions(copy) == decisions(original)
        # The events spans carry come back in the same order, at the same times.
        assert [(e.type, e.turn, e.ts) for e in copy] == [
            (e.type, e.turn, e.ts) for e in original if e.type in spanned
        ]

    # The imported runs are ordinary runs of the other home: listed, shown, searchable.
    capsys.readouterr()
    assert main(["--home", str(other), "runs", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(r["status"] for r in listed) == sorted(
        r["status"] for r in json.loads(_runs_json(golden_home, capsys))
    )
    assert main(["--home", str(other), "show", runs[0].run_id[:8]]) == 0


def test_an_imported_run_exported_again_comes_back_the_same(
    wb_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ingest-otel", str(FIXTURES / "genai-agent.json"), "--json"]) == 0
    (first,) = json.loads(capsys.readouterr().out)
    other = tmp_path / "teammate"
    with Collector(other) as collector:
        assert main(["export-otel", first["run_id"], "--endpoint", collector.endpoint]) == 0
        (again,) = collector.wait_for_runs(1)
    original = read_trace(first["path"]).events
    copy = read_trace(again.path).events
    assert decisions(copy) == decisions(original)
    assert build_chain(copy).turns[0].tool_calls[0].end.observed  # type: ignore[union-attr]


def _runs_json(home: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["--home", str(home), "runs", "--json"]) == 0
    return capsys.readouterr().out


def test_collecting_the_same_trace_again_writes_nothing(golden_home: Path, tmp_path: Path) -> None:
    other = tmp_path / "teammate"
    with Collector(other) as collector:
        assert main(["export-otel", "--all", "--endpoint", collector.endpoint]) == 0
        collector.wait_for_runs(8)
        assert main(["export-otel", "--all", "--endpoint", collector.endpoint]) == 0
        runs = collector.wait_for_runs(16)
    assert [run.written for run in runs] == [True] * 8 + [False] * 8
    assert len(list((other / "traces").glob("*.jsonl"))) == 8


def test_ingest_otel_reads_genai_spans_with_observed_tool_calls(
    wb_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ingest-otel", str(FIXTURES / "genai-agent.json"), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert (run["status"], run["turns"], run["written"]) == ("completed", 2, True)
    events = read_trace(run["path"]).events
    start = events[0]
    assert isinstance(start, RunStart)
    assert (
        start.origin == "imported"
        and start.client == "opentelemetry.instrumentation.openai_v2 2.1b0"
    )
    assert start.task == "How many lines does notes.txt have?"
    assert [t["function"]["name"] for t in start.tools] == ["count_lines"]
    chain = build_chain(events)
    first, second = chain.turns
    (call,) = first.tool_calls
    assert (call.name, call.call_id, call.arguments, call.status) == (
        "count_lines",
        "call_1",
        {"path": "notes.txt"},
        "ok",
    )
    assert call.end is not None and call.end.result == "3" and call.end.observed
    assert second.request is not None and second.request.messages[-1]["role"] == "tool"
    # Asked for when the first answer came, answered when the next request went out.
    assert first.response is not None and call.start.ts == first.response.ts
    assert call.end.ts == second.request.ts
    assert first.response is not None and first.response.usage == {
        "prompt_tokens": 50,
        "completion_tokens": 12,
        "total_tokens": 62,
    }
    assert chain.end is not None and chain.end.final_answer == "notes.txt has 3 lines."

    # Runs list and search see it like any other run.
    assert main(["runs", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["task"] == start.task
    # Importing the file again adds nothing.
    assert main(["ingest-otel", str(FIXTURES / "genai-agent.json")]) == 0
    assert "already imported" in capsys.readouterr().out


def test_ingest_otel_repairs_arguments_as_the_agent_loop_does(
    wb_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An exporter that kept the model's argument string with its trailing comma: the
    imported call has the arguments the loop would have run, not a parse error."""
    document = json.loads((FIXTURES / "genai-agent.json").read_text(encoding="utf-8"))
    raw = '{"path": "notes.txt",}'
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for attribute in span["attributes"]:
                    if attribute["key"] != "gen_ai.output.messages":
                        continue
                    messages = json.loads(attribute["value"]["stringValue"])
                    for part in messages[0]["parts"]:
                        if part["type"] == "tool_call":
                            part["arguments"] = raw
                    attribute["value"]["stringValue"] = json.dumps(messages)
    path = tmp_path / "trailing-comma.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert main(["ingest-otel", str(path), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    (call,) = build_chain(read_trace(run["path"]).events).turns[0].tool_calls
    assert call.start.arguments_raw == raw
    assert (call.arguments, call.start.parse_error) == ({"path": "notes.txt"}, None)


def test_ingest_otel_bad_files_are_one_line(
    wb_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}\n')
    assert main(["ingest-otel", str(bad)]) == 2
    assert capsys.readouterr().err.strip() == f"workbench: {bad}: traceId 'zz' is not a hex id"
    lines = tmp_path / "lines.jsonl"
    lines.write_text('{"resourceSpans": []}\n{"nope": 1}\n')
    assert main(["ingest-otel", str(lines)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"workbench: {lines}:2: not an OTLP JSON trace export (no resourceSpans)"
    assert main(["ingest-otel", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_collect_speaks_json_and_refuses_what_is_not_otlp(wb_home: Path) -> None:
    document = (FIXTURES / "genai-agent.json").read_bytes()
    with Collector(wb_home) as collector:
        status, body = _post(collector.endpoint, document, "application/json")
        assert (status, body) == (200, b"{}")
        (run,) = collector.wait_for_runs(1)
        assert run.status == "completed"
        # The same request gzipped is the same trace: nothing new to write.
        gzipped = _post(collector.endpoint, gzip.compress(document), "application/json", "gzip")
        assert gzipped == (200, b"{}")
        runs = collector.wait_for_runs(2)
        assert runs[1].run_id == run.run_id and not runs[1].written
        assert _post(collector.endpoint, b"hello", "text/plain")[0] == 415
        assert _post(collector.endpoint, b"", "application/protobuf") == (200, b"")
        assert _post(collector.endpoint, b"\xff\x00garbage", "application/x-protobuf")[0] == 400
        assert collector.problems and "refused a request" in collector.problems[-1]


def _post(
    url: str, data: bytes, content_type: str, encoding: str | None = None
) -> tuple[int, bytes]:
    headers = {"Content-Type": content_type}
    if encoding is not None:
        headers["Content-Encoding"] = encoding
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_collect_command_runs_until_interrupted(golden_home: Path, tmp_path: Path) -> None:
    other = tmp_path / "teammate"
    process = workbench_process("--home", str(other), "collect", "--port", "0")
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("collecting OTLP/HTTP spans on http://127.0.0.1:"), first
        endpoint = first.split(" on ")[1].split(" into ")[0]
        run_id = "276a0272c8a551178d8bfedb26070002"
        assert main(["export-otel", run_id, "--endpoint", endpoint]) == 0
        assert process.stdout.readline().startswith("imported run ")
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "stopped; 1 run(s)" in out and "Traceback" not in err


def _mutations(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The fixture with one attribute of one span given a value of another kind, each."""
    odd_values = [
        {"intValue": "7"},
        {"intValue": str(2**62)},
        {"stringValue": "not json ["},
        {"arrayValue": {"values": [{"intValue": "1"}]}},
        {"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": True}}]}},
        {},
    ]
    variants = []
    spans = [
        (i, j, k)
        for i, scope in enumerate(document["resourceSpans"][0]["scopeSpans"])
        for j, span in enumerate(scope["spans"])
        for k in range(len(span["attributes"]))
    ]
    for number, (i, j, k) in enumerate(spans):
        for odd in odd_values:
            variant = json.loads(json.dumps(document))
            span = variant["resourceSpans"][0]["scopeSpans"][i]["spans"][j]
            span["attributes"][k]["value"] = odd
            span["traceId"] = f"{number:08x}" + span["traceId"][8:]
            for other in variant["resourceSpans"][0]["scopeSpans"]:
                for each in other["spans"]:
                    each["traceId"] = span["traceId"]
            variants.append(variant)
    return variants


def test_odd_attribute_values_import_or_fail_in_one_line(wb_home: Path) -> None:
    from workbench.engine.otel.ingest import (
        ImportedRun,
        OtlpError,
        group_traces,
        parse_json,
        write_run,
    )

    document = json.loads((FIXTURES / "genai-agent.json").read_text(encoding="utf-8"))
    outcomes = {"imported": 0, "refused": 0}
    for variant in _mutations(document):
        for spans in group_traces(parse_json(variant)).values():
            try:
                run = write_run(wb_home, spans)
            except OtlpError as exc:
                assert str(exc).startswith(f"trace {spans[0].trace_id}: ")
                outcomes["refused"] += 1
                continue
            assert isinstance(run, ImportedRun) and read_trace(run.path).problems == []
            outcomes["imported"] += 1
    assert outcomes["imported"] > 50 and outcomes["refused"] > 0


def test_ingest_otel_keeps_the_good_traces_of_a_file_with_a_bad_one(
    wb_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = json.loads((FIXTURES / "genai-agent.json").read_text(encoding="utf-8"))
    bad = json.loads(json.dumps(good))
    for scope in bad["resourceSpans"][0]["scopeSpans"]:
        for span in scope["spans"]:
            span["traceId"] = "f" * 32
            for attribute in span["attributes"]:
                if attribute["key"] == "gen_ai.response.finish_reasons":
                    attribute["value"] = {"arrayValue": {"values": [{"intValue": "7"}]}}
    both = tmp_path / "both.jsonl"
    both.write_text(json.dumps(bad) + "\n" + json.dumps(good) + "\n", encoding="utf-8")
    assert main(["ingest-otel", str(both)]) == 1
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith(f"workbench: {both}: trace ffff")
    assert out.startswith("imported run 5b8efff79803")


def test_diff_finds_an_imported_copy_the_same_as_its_original(
    golden_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = "276a0272c8a551178d8bfedb26070002"
    with Collector(golden_home) as collector:  # the copy lands next to its original
        assert main(["export-otel", original, "--endpoint", collector.endpoint]) == 0
        (copy,) = collector.wait_for_runs(1)
    capsys.readouterr()
    assert main(["diff", original, copy.run_id, "--chain"]) == 0
    assert "the decision chains are the same" in capsys.readouterr().out
    assert main(["diff", original, copy.run_id, "--tools"]) == 0
    assert "the tool schemas are the same" in capsys.readouterr().out


def test_collect_on_a_taken_port_is_one_line(
    wb_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["collect", "--port", str(port)]) == 2
    assert capsys.readouterr().err == (
        f"workbench: cannot listen on 127.0.0.1:{port} (Address already in use); "
        "pick another --port\n"
    )


def test_spans_waiting_for_their_root_survive_a_killed_collector(wb_home: Path) -> None:
    from workbench.engine.otel.collect import OtlpReceiver
    from workbench.engine.otel.ingest import parse_json
    from workbench.engine.otel.spans import SpanEventRecord

    spans = parse_json(json.loads((FIXTURES / "genai-agent.json").read_text(encoding="utf-8")))
    children = [span for span in spans if span.parent_id is not None]
    root = [span for span in spans if span.parent_id is None]
    children[0].events.append(SpanEventRecord("note", 1, {"k": "v"}))
    first = OtlpReceiver(wb_home)
    first.take(children)
    assert first.runs == []
    del first  # killed: no flush

    second = OtlpReceiver(wb_home)
    assert list(second.pending.values()) == [children]
    second.take(root)
    (run,) = second.runs
    assert (run.status, run.turns) == ("completed", 2)
    assert list((wb_home / "otel-pending").iterdir()) == []


def test_collect_takes_the_exporters_gzip(
    golden_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    otlp_receiver: RecordingReceiver,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    assert main(["export-otel", "276a0272", "--endpoint", otlp_receiver.endpoint]) == 0
    (sent,) = otlp_receiver.requests
    assert {k.lower(): v for k, v in sent.headers.items()}["content-encoding"] == "gzip"
    with Collector(tmp_path / "teammate") as collector:
        assert main(["export-otel", "276a0272", "--endpoint", collector.endpoint]) == 0
        (run,) = collector.wait_for_runs(1)
    assert (run.status, run.turns) == ("completed", 2)
