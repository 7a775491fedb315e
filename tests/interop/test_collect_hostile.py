"""`workbench collect` under hostile input, against the real command in a subprocess.

Bodies that are not OTLP get one 4xx and one line on stderr, never a traceback; a gzip bomb
is inflated only up to the body limit (the receiver's memory is read from
/proc/<pid>/status); spans whose root never arrives wait within bounds.
"""

from __future__ import annotations

import gzip
import json
import signal
import threading
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from workbench.cli import build_parser, main

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.support.processes import workbench_process
from workbench.engine.otel import collect as otel_collect
from workbench.engine.otel.collect import BodyError, OtlpReceiver, decompressed
from workbench.engine.otel.ingest import parse_json

FIXTURES = Path(__file__).parent / "fixtures"
WAIT_S = 60.0


def _fixture() -> dict[str, Any]:
    document: dict[str, Any] = json.loads((FIXTURES / "genai-agent.json").read_text())
    return document


def _spans(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [span for scope in document["resourceSpans"][0]["scopeSpans"] for span in scope["spans"]]


class _Lines:
    """The lines a stream has written so far, read on a thread, to wait on."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def wait_for(self, enough: Callable[[list[str]], bool]) -> list[str]:
        with self._changed:
            assert self._changed.wait_for(lambda: enough(self.lines), WAIT_S), self.lines[-5:]
            return list(self.lines)

    def close(self) -> list[str]:
        self._thread.join(WAIT_S)
        return self.lines


def _at_least(count: int) -> Callable[[list[str]], bool]:
    return lambda lines: len(lines) >= count


class Collector:
    """`workbench collect` on a free loopback port, until `stop`."""

    def __init__(self, home: Path, *flags: str) -> None:
        self.home = home
        self.process = workbench_process("--home", str(home), "collect", "--port", "0", *flags)
        assert self.process.stdout is not None and self.process.stderr is not None
        first = self.process.stdout.readline()
        assert first.startswith("collecting OTLP/HTTP spans on http://127.0.0.1:"), first
        self.endpoint = first.split(" on ")[1].split(" into ")[0]
        self.out = _Lines(self.process.stdout)
        self.err = _Lines(self.process.stderr)

    def post(
        self, data: bytes, content_type: str = "application/json", encoding: str | None = None
    ) -> tuple[int, bytes]:
        headers = {"Content-Type": content_type}
        if encoding is not None:
            headers["Content-Encoding"] = encoding
        request = urllib.request.Request(self.endpoint, data=data, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=WAIT_S) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def memory_kb(self) -> dict[str, int]:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        return {name: int(fields[name].split()[0]) for name in ("VmRSS", "VmHWM")}

    def stop(self) -> tuple[list[str], list[str]]:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        self.process.wait(WAIT_S)
        return self.out.close(), self.err.close()


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    running = Collector(tmp_path / "home")
    yield running
    running.stop()


def _protobuf_with_trace_id(trace_id: bytes) -> bytes:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = trace_id, b"\x01" * 8, "chat"
    data: bytes = request.SerializeToString()
    return data


def _hostile_bodies() -> list[tuple[str, bytes, str, str | None, int, str]]:
    """(what, body, content type, content encoding, status, what the answer says)."""
    deep = b"[" * 100_000 + b"]" * 100_000
    long_ids = _fixture()
    for span in _spans(long_ids):
        span["traceId"] = "ab" * 200
    good = json.dumps(_fixture()).encode()
    return [
        ("JSON nested 100k deep", deep, "application/json", None, 400, "nested too deeply"),
        (
            "resourceSpans nested 100k deep",
            b'{"resourceSpans": ' + deep + b"}",
            "application/json",
            None,
            400,
            "nested too deeply",
        ),
        (
            "a 400-character trace id",
            json.dumps(long_ids).encode(),
            "application/json",
            None,
            400,
            "traceId is 200 bytes; OTLP's is 16",
        ),
        (
            "a 200-byte protobuf trace id",
            _protobuf_with_trace_id(b"\xab" * 200),
            "application/x-protobuf",
            None,
            400,
            "traceId is 200 bytes",
        ),
        ("labelled gzip, not gzip", good, "application/json", "gzip", 400, "not valid gzip"),
        (
            "gzip cut short",
            gzip.compress(good)[:-20],
            "application/json",
            "gzip",
            400,
            "not valid gzip (it ends too soon)",
        ),
        ("labelled deflate, not", b"hello", "application/json", "deflate", 400, "not valid"),
        ("a brotli body", b"\x0b\x02\x80hi\x03", "application/json", "br", 415, "'br'"),
        ("a zstd body", b"(\xb5/\xfd\x00X", "application/json", "zstd", 415, "'zstd'"),
        ("not UTF-8", b'{"resourceSpans": "\xff"}', "application/json", None, 400, "JSON"),
    ]


def test_hostile_bodies_get_one_clean_4xx_and_the_receiver_keeps_serving(
    collector: Collector,
) -> None:
    good = json.dumps(_fixture()).encode()
    assert collector.post(good) == (200, b"{}")
    collector.out.wait_for(lambda lines: any(ln.startswith("imported run ") for ln in lines))
    refused = 0
    for what, body, content_type, encoding, status, says in _hostile_bodies():
        code, answer = collector.post(body, content_type, encoding)
        message = json.loads(answer)["message"]
        assert (code, says in message) == (status, True), (what, code, message)
        assert len(message) < 200 and "\n" not in message, what
        refused += 1
        lines = collector.err.wait_for(_at_least(refused))
        assert lines[-1] == f"workbench: refused a request: {message}", what
        # Still serving: the good request again is the same trace, already imported.
        assert collector.post(gzip.compress(good), encoding="gzip") == (200, b"{}"), what
    deflated = collector.post(zlib.compress(good), encoding="deflate")
    assert deflated == (200, b"{}")
    out, err = collector.stop()
    assert collector.process.returncode == 0
    assert len(err) == refused and "Traceback" not in "\n".join(err), err[:5]
    assert out[-1] == "stopped; 12 run(s) from 36 span(s)"


def _bomb() -> bytes:
    """2 MB of gzip that inflates to 2 GB of zeros."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1 << 20)
    parts = [compressor.compress(zeros) for _ in range(2048)]
    return b"".join([*parts, compressor.flush()])


def test_gzip_bombs_are_refused_within_the_body_limit(collector: Collector) -> None:
    bomb = _bomb()
    assert len(bomb) < 3 * 2**20
    before = collector.memory_kb()["VmRSS"]
    answers = [collector.post(bomb, "application/x-protobuf", "gzip") for _ in range(5)]
    after = collector.memory_kb()
    # The body limit is 64 MiB; unbounded, five bombs took the receiver to 1.8 GB and kept it.
    assert after["VmHWM"] - before < 256 * 1024, after
    assert after["VmRSS"] - before < 128 * 1024, after
    message = "the body inflates past 64 MiB; send smaller batches"
    assert answers == [(413, json.dumps({"code": 3, "message": message}).encode())] * 5
    assert collector.post(json.dumps(_fixture()).encode()) == (200, b"{}")
    _, err = collector.stop()
    assert err == [f"workbench: refused a request: {message}"] * 5


def test_a_body_over_the_limit_as_sent_is_413(collector: Collector) -> None:
    code, answer = collector.post(b" " * (otel_collect.MAX_BODY + 1))
    too_big = f"request body is larger than the server's limit of {otel_collect.MAX_BODY} bytes"
    assert (code, json.loads(answer)["message"]) == (413, too_big)
    assert collector.post(json.dumps(_fixture()).encode()) == (200, b"{}")


def test_inflating_stops_at_the_limit() -> None:
    text = b"x" * 1000
    assert decompressed(gzip.compress(text), "gzip", limit=1000) == text
    assert decompressed(gzip.compress(text) + gzip.compress(b"y"), "gzip", 1001) == text + b"y"
    assert decompressed(zlib.compress(text), "deflate", 1000) == text
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    assert decompressed(raw.compress(text) + raw.flush(), "deflate", 1000) == text
    with pytest.raises(BodyError) as refused:
        decompressed(gzip.compress(text), "gzip", limit=999)
    assert refused.value.status == 413
    with pytest.raises(BodyError) as garbage:
        decompressed(zlib.compress(text) + b"more", "deflate", 2000)
    assert (garbage.value.status, str(garbage.value)) == (
        400,
        "the body is not valid deflate (data after its end)",
    )


def _orphans(count: int) -> bytes:
    """`count` traces of the fixture's two model-call spans each, without their root."""
    document = _fixture()
    scopes = document["resourceSpans"][0]["scopeSpans"]
    for scope in scopes:
        scope["spans"] = [span for span in scope["spans"] if span.get("parentSpanId")]
    template = json.dumps(document)
    trace_id = _spans(document)[0]["traceId"]
    copies = [
        json.loads(template.replace(trace_id, f"{n:08x}" + trace_id[8:])) for n in range(count)
    ]
    document["resourceSpans"] = [copy["resourceSpans"][0] for copy in copies]
    return json.dumps(document).encode()


def test_traces_whose_root_never_comes_wait_at_most_max_pending(tmp_path: Path) -> None:
    collector = Collector(tmp_path / "home", "--max-pending", "20")
    try:
        assert collector.post(_orphans(200)) == (200, b"{}")
        out = collector.out.wait_for(_at_least(180))
        err = collector.err.wait_for(_at_least(180))
        assert len(list((tmp_path / "home" / "otel-pending").iterdir())) == 20
        assert {line[:13] + line[25:] for line in out} == {"imported run  (completed, 2 turn(s))"}
        first = "00000000" + _spans(_fixture())[0]["traceId"][8:]  # the longest-waiting
        assert err[0] == (
            f"workbench: trace {first}: 2 span(s) written as a run before its root span "
            "arrived: over 20 traces were waiting (--max-pending)"
        )
    finally:
        out, err = collector.stop()
    assert out[-1] == "stopped; 200 run(s) from 400 span(s)"  # the 20 waiting, at stop
    assert len(err) == 180 and "Traceback" not in "\n".join(err)
    assert list((tmp_path / "home" / "otel-pending").iterdir()) == []


def test_a_trace_with_no_new_span_for_the_timeout_is_written(tmp_path: Path) -> None:
    collector = Collector(tmp_path / "home", "--pending-timeout", "0.5")
    document = _fixture()
    root = json.loads(json.dumps(document))
    for scope in document["resourceSpans"][0]["scopeSpans"]:
        scope["spans"] = [span for span in scope["spans"] if span.get("parentSpanId")]
    for scope in root["resourceSpans"][0]["scopeSpans"]:
        scope["spans"] = [span for span in scope["spans"] if not span.get("parentSpanId")]
    try:
        assert collector.post(json.dumps(document).encode()) == (200, b"{}")
        (note,) = collector.err.wait_for(_at_least(1))
        assert note.endswith(
            ": 2 span(s) written as a run before its root span arrived: "
            "no new span for 0.5 s (--pending-timeout)"
        )
        (written,) = collector.out.wait_for(_at_least(1))
        assert written.startswith("imported run ") and written.endswith(" (completed, 2 turn(s))")
        # The root, late: the run is written already and stays as it was.
        assert collector.post(json.dumps(root).encode()) == (200, b"{}")
        late = collector.err.wait_for(_at_least(2))[1]
        trace_id = _spans(root)[0]["traceId"]
        assert late == (
            f"workbench: trace {trace_id}: 1 span(s) came after its run was written without "
            "them; not added"
        )
    finally:
        out, _ = collector.stop()
    assert out == [written, "stopped; 1 run(s) from 3 span(s)"]


def test_spans_waiting_past_the_span_cap_write_the_longest_waiting_trace(tmp_path: Path) -> None:
    notes: list[str] = []
    receiver = OtlpReceiver(tmp_path, on_note=notes.append, max_pending_spans=5)
    spans = parse_json(json.loads(_orphans(3)))
    receiver.take(spans[:4])  # two traces of two spans each
    assert (len(receiver.pending), notes) == (2, [])
    receiver.take(spans[4:])  # the third makes six spans: the first trace goes
    assert list(receiver.pending) == [spans[2].trace_id, spans[4].trace_id]
    assert notes == [
        f"trace {spans[0].trace_id}: 2 span(s) written as a run before its root span "
        "arrived: over 5 spans were waiting"
    ]
    assert [run.run_id for run in receiver.runs] == [spans[0].trace_id]


def test_spooled_traces_over_the_cap_are_written_when_the_next_receiver_starts(
    tmp_path: Path,
) -> None:
    spans = parse_json(json.loads(_orphans(3)))
    OtlpReceiver(tmp_path).take(spans)  # then killed: three traces spooled
    notes: list[str] = []
    again = OtlpReceiver(tmp_path, on_note=notes.append, max_pending_traces=2)
    assert len(again.pending) == 2 and len(again.runs) == 1 and len(notes) == 1


def test_collects_defaults_are_the_receivers() -> None:
    args = build_parser().parse_args(["collect"])
    assert args.max_pending == otel_collect.MAX_PENDING_TRACES
    assert args.pending_timeout == otel_collect.PENDING_TIMEOUT_S


def test_ingest_otel_of_hostile_files_is_one_line(
    wb_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["ingest-otel", str(deep)]) == 2
    assert capsys.readouterr().err == (
        f"workbench: {deep}: JSON nested too deeply to be an OTLP trace export\n"
    )
    long_ids = _fixture()
    for span in _spans(long_ids):
        span["traceId"] = "ab" * 200
    ids = tmp_path / "ids.json"
    ids.write_text(json.dumps(long_ids))
    assert main(["ingest-otel", str(ids)]) == 2
    assert capsys.readouterr().err == (
        f"workbench: {ids}: span 'chat gpt-4o-mini': traceId is 200 bytes; OTLP's is 16 "
        "(32 hex digits)\n"
    )
    assert list((wb_home / "traces").iterdir()) == []
