"""`workbench export-otel` against a real OTLP/HTTP receiver: the span tree, the GenAI and
OpenInference attributes, timestamps, statuses, idempotent ids, redaction and errors."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.interop.conftest import RecordingReceiver
from traces.events import ModelRequest, RunEnd, RunStart, ToolStart
from traces.reader import read_trace
from workbench.cli import main

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")


def _by_trace(spans: list[Any]) -> dict[str, list[Any]]:
    traces: dict[str, list[Any]] = defaultdict(list)
    for span in spans:
        traces[span.trace_id].append(span)
    return traces


def test_one_trace_per_run_with_the_agent_chat_and_tool_spans(
    golden_home: Path,
    golden_dir: Path,
    otlp_receiver: RecordingReceiver,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["export-otel", "--all", "--endpoint", otlp_receiver.endpoint, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runs"] == 8
    traces = _by_trace(otlp_receiver.spans())
    assert len(traces) == 8 and report["spans"] == sum(len(s) for s in traces.values())
    assert {r.content_type for r in otlp_receiver.requests} == {"application/x-protobuf"}

    for path in golden_dir.glob("*.jsonl"):
        events = read_trace(path).events
        start = next(e for e in events if isinstance(e, RunStart))
        end = next((e for e in events if isinstance(e, RunEnd)), None)
        (spans,) = [
            s for s in traces.values() if s[-1].attributes.get("workbench.run_id") == start.run_id
        ]
        roots = [s for s in spans if s.parent_id is None]
        assert len(roots) == 1
        root = roots[0]
        assert {s.parent_id for s in spans if s is not root} <= {root.span_id}
        assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert root.attributes["openinference.span.kind"] == "AGENT"
        assert root.attributes["input.value"] == start.task
        # Span times are the trace's own.
        assert root.start_ns == int(start.ts.timestamp() * 1e6) * 1000
        if end is None:
            assert not root.error and "workbench.run.status" in root.attributes
        else:
            assert root.end_ns == int(end.ts.timestamp() * 1e6) * 1000
            assert root.error == (end.status != "completed")
            if end.status != "completed":
                assert root.status_message.startswith(end.status)
            assert root.attributes["gen_ai.usage.input_tokens"] == end.totals.input_tokens

        chats = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
        requests = [e for e in events if isinstance(e, ModelRequest)]
        assert len(chats) == len(requests)
        for chat, request in zip(chats, requests, strict=True):
            assert chat.attributes["gen_ai.request.model"] == start.model
            assert chat.attributes["openinference.span.kind"] == "LLM"
            messages = json.loads(chat.attributes["gen_ai.input.messages"])
            assert [m["role"] for m in messages] == [m["role"] for m in request.messages]
            assert chat.attributes["llm.input_messages.0.message.role"] == messages[0]["role"]
        tools = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "execute_tool"]
        starts = [e for e in events if isinstance(e, ToolStart)]
        assert [
            (t.attributes["gen_ai.tool.name"], t.attributes["gen_ai.tool.call.id"]) for t in tools
        ] == [(s.name, s.call_id) for s in starts]
        assert all(t.attributes["tool.name"] == t.attributes["gen_ai.tool.name"] for t in tools)
        assert all(t.attributes["openinference.span.kind"] == "TOOL" for t in tools)


def test_token_counts_and_output_messages_on_chat_spans(
    golden_home: Path, otlp_receiver: RecordingReceiver
) -> None:
    run_id = "276a0272c8a551178d8bfedb26070002"  # completed, with a retried first call
    assert main(["export-otel", run_id[:8], "--endpoint", otlp_receiver.endpoint]) == 0
    spans = otlp_receiver.spans()
    chats = [s for s in spans if s.kind == "LLM"]
    failed, answered = chats[0], chats[1]
    assert failed.error and failed.attributes["error.type"] == "status"
    assert (failed.attributes["workbench.attempt"], answered.attributes["workbench.attempt"]) == (
        1,
        2,
    )
    # The golden runs were recorded against api.openai.com.
    assert answered.attributes["gen_ai.provider.name"] == "openai"
    assert answered.attributes["llm.provider"] == "openai"
    assert answered.attributes["llm.system"] == "openai"
    assert answered.attributes["gen_ai.usage.input_tokens"] == 490
    assert answered.attributes["gen_ai.usage.output_tokens"] == 102
    assert answered.attributes["llm.token_count.total"] == 592
    assert answered.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    (output,) = json.loads(answered.attributes["gen_ai.output.messages"])
    assert output["role"] == "assistant" and output["finish_reason"] == "tool_calls"
    call = next(p for p in output["parts"] if p["type"] == "tool_call")
    assert call == {
        "type": "tool_call",
        "id": "call_r1",
        "name": "read_file",
        "arguments": {"path": "README.md"},
    }
    prefix = "llm.output_messages.0.message.tool_calls.0.tool_call"
    assert answered.attributes[f"{prefix}.function.arguments"] == '{"path": "README.md"}'
    root = next(s for s in spans if s.parent_id is None)
    assert not root.error and root.attributes["workbench.run.status"] == "completed"


def test_exporting_twice_sends_the_same_ids(
    golden_home: Path, otlp_receiver: RecordingReceiver
) -> None:
    assert main(["export-otel", "--all", "--endpoint", otlp_receiver.endpoint]) == 0
    first = {(s.trace_id, s.span_id) for s in otlp_receiver.spans()}
    otlp_receiver.requests.clear()
    assert main(["export-otel", "--all", "--endpoint", otlp_receiver.endpoint]) == 0
    assert {(s.trace_id, s.span_id) for s in otlp_receiver.spans()} == first
    assert len(first) == sum(1 for _ in otlp_receiver.spans())  # no id used twice


def test_endpoint_and_headers_from_the_standard_variables(
    golden_home: Path, otlp_receiver: RecordingReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = otlp_receiver.endpoint.removesuffix("/v1/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", base)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=agents,api-key=s3cret")
    assert main(["export-otel", "--since", "2020-01-01"]) == 0
    assert otlp_receiver.requests
    headers = {k.lower(): v for k, v in otlp_receiver.requests[0].headers.items()}
    assert headers["x-team"] == "agents" and headers["api-key"] == "s3cret"
    spans = otlp_receiver.spans()
    assert len({s.trace_id for s in spans}) == 8
    assert {s.service for s in spans} == {"agent-workbench"}
    otlp_receiver.requests.clear()
    assert main(["export-otel", "--since", "2999-01-01"]) == 0
    assert otlp_receiver.requests == []


def test_configured_secrets_are_redacted_in_the_spans(
    golden_home: Path, otlp_receiver: RecordingReceiver
) -> None:
    # A pattern configured after the runs were recorded still keeps the text out of spans.
    (golden_home / "redact-patterns.txt").write_text("Tokyo\n", encoding="utf-8")
    assert main(["export-otel", "--all", "--endpoint", otlp_receiver.endpoint]) == 0
    text = json.dumps([s.attributes for s in otlp_receiver.spans()])
    assert "Tokyo" not in text and "[REDACTED:pattern-1]" in text


def test_unreachable_endpoint_and_bad_usage_are_one_line(
    golden_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    assert main(["export-otel", "--all", "--endpoint", url, "--timeout", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        err[-1]
        == f"workbench: {url}/v1/traces did not take the spans: cannot connect (Connection refused)"
    )
    assert main(["export-otel", "--endpoint", url]) == 2
    assert "--all" in capsys.readouterr().err
    assert main(["export-otel", "--all", "--endpoint", "ftp://x"]) == 2
    assert "not an http(s) URL" in capsys.readouterr().err


def test_startup_does_not_load_opentelemetry() -> None:
    code = (
        "import sys, workbench.cli\n"
        "workbench.cli.build_parser()\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'opentelemetry')\n"
        "assert not bad, bad[:3]\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


def test_progress_is_told_after_each_run(
    golden_dir: Path, otlp_receiver: RecordingReceiver
) -> None:
    from workbench.engine.otel import export as otel_export

    runs = [read_trace(path).events for path in sorted(golden_dir.glob("*.jsonl"))]
    seen: list[tuple[int, int, int]] = []
    sender = otel_export.SpanSender(
        otel_export.exporter(otlp_receiver.endpoint, None, 5), batch_size=10
    )
    state = otel_export.export_runs(
        runs,
        sender,
        otel_export.resource(),
        total=len(runs),
        progress=lambda p: seen.append((p.runs_done, p.runs_total, p.spans)),
    )
    sender.close()
    assert [done for done, _, _ in seen] == list(range(1, 9))
    assert {total for _, total, _ in seen} == {8}
    assert [spans for _, _, spans in seen] == sorted(spans for _, _, spans in seen)
    assert state.spans == seen[-1][2] == len(otlp_receiver.spans()) == sender.sent
    assert len(otlp_receiver.requests) > 1  # sent in batches as it went


def test_a_bad_redaction_pattern_is_one_line(
    golden_home: Path, otlp_receiver: RecordingReceiver, capsys: pytest.CaptureFixture[str]
) -> None:
    (golden_home / "redact-patterns.txt").write_text("(unclosed\n", encoding="utf-8")
    assert main(["export-otel", "--all", "--endpoint", otlp_receiver.endpoint]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a valid regular expression" in err[0]
    assert otlp_receiver.requests == []


def test_provider_is_named_only_for_known_hosts() -> None:
    from workbench.engine.otel.attrs import provider_of

    assert provider_of("https://api.openai.com/v1") == ("openai", "openai")
    assert provider_of("https://myorg.openai.azure.com/openai") == ("azure.ai.openai", "azure")
    assert provider_of("http://127.0.0.1:8080/v1") is None
    assert provider_of("https://evil-api.openai.com.example/v1") is None
    assert provider_of(None) is None


def test_the_service_name_comes_from_the_standard_variables(
    golden_home: Path, otlp_receiver: RecordingReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "support-agents")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=staging")
    assert main(["export-otel", "--all", "--endpoint", otlp_receiver.endpoint]) == 0
    assert {s.service for s in otlp_receiver.spans()} == {"support-agents"}


def test_a_fork_links_to_its_parent_and_trims_are_span_events(
    golden_home: Path, golden_dir: Path, otlp_receiver: RecordingReceiver
) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    parent = "276a0272c8a551178d8bfedb26070002"
    fork = "f0" * 16
    text = (golden_dir / f"{parent}.jsonl").read_text(encoding="utf-8").replace(parent, fork)
    lines = text.splitlines()
    start = json.loads(lines[0]) | {"parent_run_id": parent, "fork_turn": 2}
    (golden_home / "traces" / f"{fork}.jsonl").write_text(
        "\n".join([json.dumps(start), *lines[1:]]) + "\n", encoding="utf-8"
    )
    assert main(["export-otel", "--all", "--endpoint", otlp_receiver.endpoint]) == 0

    roots = {}
    for received in otlp_receiver.requests:
        request = ExportTraceServiceRequest.FromString(received.body)
        for span in request.resource_spans[0].scope_spans[0].spans:
            if not span.parent_span_id:
                run_id = next(
                    kv.value.string_value for kv in span.attributes if kv.key == "workbench.run_id"
                )
                roots[run_id] = span
    (link,) = roots[fork].links
    assert (link.trace_id, link.span_id) == (roots[parent].trace_id, roots[parent].span_id)
    assert {kv.key: kv.value.int_value for kv in link.attributes}["workbench.fork_turn"] == 2

    # The run that hit its token budget trimmed its history: events on its agent span.
    budget = next(
        r for r in roots.values() if any(e.name == "workbench.history_trimmed" for e in r.events)
    )
    trim = next(e for e in budget.events if e.name == "workbench.history_trimmed")
    assert {kv.key for kv in trim.attributes} >= {
        "workbench.tokens_before",
        "workbench.rounds_dropped",
    }
