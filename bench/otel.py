"""Export benchmarks: OpenTelemetry spans and the Parquet dataset, each against the tool's own
throughput on the same data.

    .venv/bin/python bench/otel.py [--runs 1000 --events 200000] [--parquet-events 1000000]

(1) `export-otel` of every run of a store (events read from the store, spans built, sent by
    the OTLP/HTTP exporter to a receiver in another process that accepts and drops them),
    in spans/s, against (2) the same exporter sending the same spans built beforehand; the
    ratio 1/2 is what building spans from a store costs on top of sending them.
(3) `export-parquet` of a store of 1M events into an empty dataset, against (4) DuckDB's
    own partitioned `COPY` of the same rows from the same store.
Traces are generated once per size under bench/.data/ (shared with bench/ingest.py).
Needs the otel extra.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ingest import generate  # noqa: E402

# A receiver that takes OTLP/HTTP export requests and drops them, in its own process so it
# does not share the exporter's interpreter.
SINK = """
import sys
from aiohttp import web

async def take(request):
    await request.read()
    return web.Response(body=b"", content_type="application/x-protobuf")

app = web.Application(client_max_size=256 * 1024 * 1024)
app.router.add_post("/v1/traces", take)
web.run_app(
    app, host="127.0.0.1", port=int(sys.argv[1]), print=lambda *_: print("ready", flush=True)
)
"""


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def store_of(folder: Path, scratch: Path, name: str):  # type: ignore[no-untyped-def]
    from traces.store import TraceStore

    store = TraceStore.open(scratch / f"{name}.duckdb")
    store.ingest([folder])
    return store


def bench_otel(data: Path, runs: int, events: int, scratch: Path) -> None:
    from workbench.engine.otel import export as otel_export

    folder = data / f"e{events}-r{runs}"
    print(f"generating {events:,} events over {runs:,} runs in {folder} …")
    generate(folder, events, runs)
    store = store_of(folder, scratch, "otel")
    run_ids = [row.run_id for row in store.runs(limit=runs)]
    port = free_port()
    sink = subprocess.Popen(
        [sys.executable, "-c", SINK, str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert sink.stdout is not None and sink.stdout.readline().strip() == "ready"
        endpoint = f"http://127.0.0.1:{port}/v1/traces"
        resource = otel_export.resource()

        spans = [
            span
            for run_id in run_ids
            for span in otel_export.run_spans(store.events(run_id), resource)
        ]
        # Each side twice, alternating; the faster pass of each counts (the machine is
        # shared, so a single pass can land in someone else's busy second).
        ours_s = raw_s = ours_cpu = raw_cpu = float("inf")
        for _ in range(2):
            sender = otel_export.SpanSender(otel_export.exporter(endpoint, None, 30))
            started, cpu = time.perf_counter(), time.process_time()
            state = otel_export.export_runs(
                (store.events(run_id, types=otel_export.SPAN_EVENT_TYPES) for run_id in run_ids),
                sender,
                resource,
            )
            ours_s = min(ours_s, time.perf_counter() - started)
            ours_cpu = min(ours_cpu, time.process_time() - cpu)
            sender.close()

            exporter = otel_export.exporter(endpoint, None, 30)
            started, cpu = time.perf_counter(), time.process_time()
            for start in range(0, len(spans), sender.batch_size):
                exporter.export(spans[start : start + sender.batch_size])
            raw_s = min(raw_s, time.perf_counter() - started)
            raw_cpu = min(raw_cpu, time.process_time() - cpu)
            exporter.shutdown()
    finally:
        sink.terminate()
        sink.wait()
    store.close()
    ours, raw = state.spans / ours_s, len(spans) / raw_s
    print(
        f"(1) export-otel:          {state.spans:>9,} spans of {len(run_ids):,} runs in "
        f"{ours_s:6.2f} s = {ours:>8,.0f} spans/s"
    )
    print(
        f"(2) OTLP exporter alone:  {len(spans):>9,} pre-built spans in {raw_s:6.2f} s "
        f"= {raw:>8,.0f} spans/s"
    )
    print(f"    ratio 1/2: {ours / raw:.2f}")
    print(
        f"    CPU seconds in this process: export-otel {ours_cpu:.2f}, exporter alone "
        f"{raw_cpu:.2f}, ratio {raw_cpu / ours_cpu:.2f}"
    )


def bench_parquet(data: Path, events: int, scratch: Path) -> None:
    runs = max(1, events // 200)
    folder = data / f"e{events}-r{runs}"
    print(f"generating {events:,} events over {runs:,} runs in {folder} …")
    generate(folder, events, runs)
    store = store_of(folder, scratch, "parquet")
    # Each side twice, into a fresh folder each time; the faster of the two counts (the
    # first pass also warms DuckDB's cache of the store for both).
    ours_s = raw_s = float("inf")
    for attempt in range(2):
        started = time.perf_counter()
        report = store.export_dataset(str(scratch / f"dataset{attempt}"))
        ours_s = min(ours_s, time.perf_counter() - started)
        target = str(scratch / f"copy{attempt}").replace("'", "''")
        started = time.perf_counter()
        store.query(
            "COPY (SELECT e.run_id, e.seq, e.type, e.turn, e.ts, e.event, "
            "CAST(r.started_at AS DATE) AS day FROM events e JOIN runs r USING (run_id)) "
            f"TO '{target}' (FORMAT parquet, PARTITION_BY (day), COMPRESSION zstd)"
        )
        raw_s = min(raw_s, time.perf_counter() - started)
    store.close()
    ours, raw = report.new_events / ours_s, report.new_events / raw_s
    print(
        f"(3) export-parquet:       {report.new_events:>9,} events in {ours_s:6.2f} s "
        f"= {ours:>9,.0f} events/s"
    )
    print(
        f"(4) DuckDB COPY:          {report.new_events:>9,} rows   in {raw_s:6.2f} s "
        f"= {raw:>9,.0f} rows/s"
    )
    print(f"    ratio 3/4: {ours / raw:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(
        allow_abbrev=False, description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--runs", type=int, default=1_000)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--parquet-events", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, default=ROOT / "bench" / ".data")
    parser.add_argument("--only", choices=("otel", "parquet"), help="run one of the two")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="workbench-bench-") as scratch:
        if args.only != "parquet":
            bench_otel(args.data, args.runs, args.events, Path(scratch))
        if args.only != "otel":
            bench_parquet(args.data, args.parquet_events, Path(scratch))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
