"""Nothing `collect` or `ingest-otel` receives is dropped without a word: a trace that gives
no run says why (its id, root span, service and what was missing), spans and log records
a run leaves out are counted, and metrics and logs are answered as OTLP asks, in protobuf
and JSON, through the OpenTelemetry SDK's own exporters."""

from __future__ import annotations

import json
import signal
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from workbench.cli import main

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
from opentelemetry.sdk.resources import Resource

from tests.interop.producers import FIXTURES
from tests.support.processes import workbench_process
from workbench.engine.otel.collect import Collector

HERE = Path(__file__).parent / "fixtures"


def _web_trace() -> dict[str, Any]:
    """An OTLP JSON export of one trace that is no agent's: an HTTP server span."""
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "web"}}]
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "opentelemetry.instrumentation.aiohttp_server"},
                        "spans": [
                            {
                                "traceId": "7e57ab1e" * 4,
                                "spanId": "00000000000000a1",
                                "name": "GET /health",
                                "kind": 2,
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": "1700000000100000000",
                                "attributes": [
                                    {"key": "http.method", "value": {"stringValue": "GET"}}
                                ],
                            }
                        ],
                    }
                ],
            }
        ]
    }


def _post(url: str, data: bytes, content_type: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_collect_says_why_a_trace_gave_no_run(wb_home: Path) -> None:
    process = workbench_process("collect", "--port", "0")
    try:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        endpoint = first.split(" on ")[1].split(" into ")[0]
        body = json.dumps(_web_trace()).encode()
        assert _post(endpoint, body, "application/json") == (200, b"{}")
        said = process.stderr.readline()
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert said.startswith("workbench: trace 7e57ab1e7e57 (root span 'GET /health', service 'web'")
    assert "no run: no span is a model or tool call" in said
    assert "gen_ai.operation.name" in said and "llm.request.type" in said
    assert "'GET /health'" in said.split("its spans:")[1]
    assert process.returncode == 0, err
    assert "0 run(s) from 1 span(s); 1 trace(s) gave no run" in out


def test_ingest_otel_lists_the_traces_that_gave_no_run(
    wb_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    both = tmp_path / "both.jsonl"
    agent = json.loads((HERE / "genai-agent.json").read_text(encoding="utf-8"))
    both.write_text(json.dumps(agent) + "\n" + json.dumps(_web_trace()) + "\n", encoding="utf-8")
    assert main(["ingest-otel", str(both), "--json"]) == 0
    captured = capsys.readouterr()
    run, skipped = json.loads(captured.out)
    assert run["status"] == "completed"
    assert skipped["run_id"] is None and skipped["trace_id"] == "7e57ab1e" * 4
    assert (skipped["root"], skipped["service"], skipped["spans"]) == ("GET /health", "web", 1)
    assert skipped["skipped"].startswith("no span is a model or tool call")
    assert "trace 7e57ab1e7e57 (root span 'GET /health'" in captured.err


def test_spans_a_run_leaves_out_are_counted(
    wb_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The OpenAI Agents SDK's workflow and turn spans are no model or tool call."""
    assert main(["ingest-otel", str(FIXTURES / "openai-agents.jsonl"), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    # 2 responses, 1 tool, the workflow's root: the run; 2 turns, a workflow, an agent: not.
    assert (run["spans"], run["unused_spans"]) == (8, 4)
    assert main(["ingest-otel", str(FIXTURES / "openai-agents.jsonl")]) == 0
    assert "4 of 8 span(s) not turned into events" in capsys.readouterr().out


def _metrics() -> Any:
    reader = InMemoryMetricReader()
    provider = MeterProvider(
        metric_readers=[reader], resource=Resource.create({"service.name": "claude-code"})
    )
    counter = provider.get_meter("com.anthropic.claude_code").create_counter(
        "claude_code.token.usage"
    )
    counter.add(61, {"type": "input"})
    counter.add(17, {"type": "output"})
    return reader.get_metrics_data()


def _plain_log_records() -> list[Any]:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": "web"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    provider.get_logger("app").emit(body="server started")
    provider.force_flush()
    return list(exporter.get_finished_logs())


def test_metrics_and_logs_are_answered_in_protobuf_and_json(wb_home: Path) -> None:
    with Collector(wb_home) as collector:
        metrics = OTLPMetricExporter(endpoint=f"{collector.base_url}/v1/metrics")
        assert metrics.export(_metrics()) == MetricExportResult.SUCCESS
        logs = OTLPLogExporter(endpoint=f"{collector.base_url}/v1/logs")
        assert logs.export(_plain_log_records()).name == "SUCCESS"
        as_json = json_format.MessageToDict(encode_metrics(_metrics()))
        status = _post(
            f"{collector.base_url}/v1/metrics", json.dumps(as_json).encode(), "application/json"
        )
        assert status == (200, b"{}")
        as_json = json_format.MessageToDict(encode_logs(_plain_log_records()))
        status = _post(
            f"{collector.base_url}/v1/logs", json.dumps(as_json).encode(), "application/json"
        )
        assert status == (200, b"{}")
        assert _post(f"{collector.base_url}/v1/logs", b"[1]", "application/json")[0] == 400
        receiver = collector.receiver
        assert (receiver.metric_points, receiver.logs_received) == (4, 2)
        assert not receiver.runs and not receiver.pending
    assert (
        receiver.summary()
        == "0 run(s) from 0 span(s); 2 log record(s); 4 metric point(s), counted only"
    )


def check_claude_code_run(
    path: Path, capsys: pytest.CaptureFixture[str], notes: str = "/work/notes/notes.txt"
) -> None:
    """The run of Claude Code answering TASK with one Read of `notes`."""
    from traces.events import RunStart
    from traces.reader import read_trace
    from traces.tree import build_chain

    events = read_trace(path).events
    start = events[0]
    assert isinstance(start, RunStart)
    assert (start.task, start.model, start.origin) == (
        "How many lines does notes.txt have?",
        "claude-sonnet-4-5",
        "imported",
    )
    assert start.client is not None and start.client.startswith("com.anthropic.claude_code")
    chain = build_chain(events)
    first, second = chain.turns
    assert first.response is not None and second.response is not None
    assert first.response.usage == {
        "prompt_tokens": 61,
        "completion_tokens": 17,
        "total_tokens": 78,
    }
    assert second.response.usage == {
        "prompt_tokens": 90,
        "completion_tokens": 9,
        "total_tokens": 99,
    }
    assert first.response.finish_reason == "tool_calls"
    (call,) = first.tool_calls
    assert (call.name, call.call_id, call.status) == ("Read", "toolu_01", "ok")
    assert call.arguments == {"file_path": notes}
    assert chain.end is not None and chain.end.final_answer == "notes.txt has 3 lines."
    capsys.readouterr()
    assert main(["show", start.run_id[:8]]) == 0
    shown = capsys.readouterr().out
    assert "tool Read [ok, " in shown and "61 in / 17 out tokens" in shown


def test_claude_code_telemetry_becomes_a_run(
    wb_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Claude Code's own OTLP export (logs and metrics as http/json, recorded from the real
    CLI against the local model server): its session is one run, written when the
    collector stops (its events name no trace, so no root span ever ends one)."""
    lines = (FIXTURES / "claude-code.jsonl").read_text(encoding="utf-8").splitlines()
    with Collector(wb_home) as collector:
        for line in lines:
            path = "/v1/logs" if "resourceLogs" in line else "/v1/metrics"
            assert _post(collector.base_url + path, line.encode(), "application/json")[0] == 200
        receiver = collector.receiver
        assert not receiver.runs and len(receiver.pending) == 1
    (run,) = receiver.runs
    assert (run.status, run.turns, run.logs, run.unused_logs) == ("completed", 2, 6, 1)
    assert receiver.logs_received == 6 and receiver.metric_points > 0
    check_claude_code_run(run.path, capsys)

    # The same export read from its file is the same run.
    assert main(["ingest-otel", str(FIXTURES / "claude-code.jsonl"), "--json"]) == 0
    (again,) = json.loads(capsys.readouterr().out)
    assert (again["run_id"], again["written"]) == (run.run_id, False)


def test_the_first_conventions_content_events_are_read(
    wb_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Semantic conventions 1.26 put a call's messages on `gen_ai.content.prompt` and
    `gen_ai.content.completion` span events, as JSON (written by hand: the producers that
    still do, such as Semantic Kernel, are too heavy to install for a test)."""
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]
    completion = [{"role": "assistant", "content": "Hello."}]

    def event(name: str, key: str, value: Any) -> dict[str, Any]:
        attribute = {"key": key, "value": {"stringValue": json.dumps(value)}}
        return {"name": name, "timeUnixNano": "1700000000050000000", "attributes": [attribute]}

    span = {
        "traceId": "0123456789abcdef" * 2,
        "spanId": "00000000000000b2",
        "name": "chat gpt-4o",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000100000000",
        "attributes": [
            {"key": "gen_ai.system", "value": {"stringValue": "openai"}},
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
            {"key": "gen_ai.usage.prompt_tokens", "value": {"intValue": "12"}},
            {"key": "gen_ai.usage.completion_tokens", "value": {"intValue": "3"}},
        ],
        "events": [
            event("gen_ai.content.prompt", "gen_ai.prompt", prompt),
            event("gen_ai.content.completion", "gen_ai.completion", completion),
        ],
    }
    document = {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "sk"}, "spans": [span]}]}]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert main(["ingest-otel", str(path), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)

    from traces.reader import read_trace
    from traces.tree import build_chain

    chain = build_chain(read_trace(Path(run["path"])).events)
    (turn,) = chain.turns
    assert turn.request is not None and turn.request.messages == prompt
    assert turn.response is not None and turn.response.message["content"] == "Hello."
    assert turn.response.usage == {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    assert chain.start is not None and chain.start.system_prompt == "Be brief."


def _second_prompt(line: str) -> str:
    """The fixture's records as a later prompt of the same session would send them."""
    document = json.loads(line)
    for resource in document.get("resourceLogs", []):
        for scope in resource["scopeLogs"]:
            for record in scope["logRecords"]:
                for key in ("timeUnixNano", "observedTimeUnixNano"):
                    record[key] = str(int(record[key]) + 60 * 10**9)
                for attribute in record["attributes"]:
                    if attribute["key"] == "prompt.id":
                        attribute["value"] = {"stringValue": "second-prompt"}
                    if attribute["key"] == "prompt":
                        attribute["value"] = {"stringValue": "And words?"}
    return json.dumps(document)


def test_each_claude_code_prompt_is_a_run_written_when_the_next_begins(wb_home: Path) -> None:
    lines = [
        line
        for line in (FIXTURES / "claude-code.jsonl").read_text(encoding="utf-8").splitlines()
        if "resourceLogs" in line
    ]
    with Collector(wb_home) as collector:
        for line in lines:
            assert (
                _post(collector.base_url + "/v1/logs", line.encode(), "application/json")[0] == 200
            )
        receiver = collector.receiver
        assert not receiver.runs  # the prompt may still go on
        assert _post(
            collector.base_url + "/v1/logs", _second_prompt(lines[0]).encode(), "application/json"
        ) == (200, b"{}")
        (first,) = receiver.runs  # the next prompt began: the first is done
        assert first.turns == 2
        for line in lines[1:]:
            _post(
                collector.base_url + "/v1/logs", _second_prompt(line).encode(), "application/json"
            )
    first, second = receiver.runs
    assert second.run_id != first.run_id and second.turns == 2

    from traces.reader import read_trace

    start = read_trace(second.path).events[0]
    assert start.type == "run_start" and start.task == "And words?"
