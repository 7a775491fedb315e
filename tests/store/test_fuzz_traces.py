"""Fuzzing ingest and the read commands with Hypothesis, over mutations of real traces.

The seeds are the golden traces and the traces the real loop records (`workbench demo`).
Each case damages one to three of them (flipped bytes, cut lines, invalid UTF-8, a BOM, NUL,
deep nesting, wrong types, unknown fields and statuses, repeated, missing and huge seqs,
non-string run ids, …) and checks the promise of the store against the reader on the same
files: ingest never raises, keeps every event the reader reads (none lost), admits nothing
else, and everything admitted reads back; `runs`, `show` and `sql` answer without a
traceback. The reader is the reference: a line is valid when `traces.reader` accepts it;
ingest's own check of each line (`traces.line_check`, without the event models) gives every
damaged line the reader's verdict and error.

`WORKBENCH_FUZZ_EXAMPLES` sets the number of cases per property (default 150 and 50,
a few hundred in all, well under a minute, the same cases on every run); the long mode,
which draws new cases each time, is e.g.
`WORKBENCH_FUZZ_EXAMPLES=5000 .venv/bin/python -m pytest tests/store/test_fuzz_traces.py`.
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.big_traces import MIB, long_agent_run, small_run_lines
from tests.support.generated_runs import run_with_big_result
from tests.support.line_checks import assert_same_verdicts
from traces.events import Event
from traces.reader import NewerSchemaError, read_trace
from traces.store import TraceStore
from workbench.cli import main

GOLDEN = Path(__file__).parents[1] / "fixtures" / "traces"
EXAMPLES = int(os.environ.get("WORKBENCH_FUZZ_EXAMPLES", "150"))
# A case that takes longer than this is a hang: faulthandler dumps every thread and ends
# the run, so a hang fails loudly instead of stalling CI.
HANG_S = 120

Lines = list[bytes]
Draw = Callable[[st.SearchStrategy[Any]], Any]


class Seeds(list[tuple[str, Lines]]):
    def __repr__(self) -> str:  # Hypothesis prints it with every failing case
        return f"<{len(self)} seed traces>"


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> Seeds:
    """(run id, whole lines) of every golden trace and every run `workbench demo` records."""
    home = tmp_path_factory.mktemp("demo-home")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["--home", str(home), "demo", "--no-tui"]) == 0
    found = Seeds()
    for path in sorted(GOLDEN.glob("v*/*.jsonl")) + sorted((home / "traces").glob("*.jsonl")):
        lines = [line for line in path.read_bytes().split(b"\n") if line]
        found.append((json.loads(lines[0])["run_id"], lines))
    return found


# --- mutations -------------------------------------------------------------------------

WRONG_VALUES: list[Any] = [
    "maybe", "5", "", 1.5, -1, 0, True, None, [], {}, [1], {"x": 1}, 2**31, 2**63, 2**64,
]  # fmt: skip
UNKNOWN_WORDS = ["exploded", "telepathy", "sideways", "COMPLETED", ""]


def _pick(draw: Draw, lines: Lines) -> int:
    return int(draw(st.integers(0, len(lines) - 1)))


def _json_edit(draw: Draw, lines: Lines, edit: Callable[[dict[str, Any]], None]) -> Lines:
    index = _pick(draw, lines)
    try:
        record = json.loads(lines[index])
    except (ValueError, RecursionError):
        return lines
    if not isinstance(record, dict):
        return lines
    edit(record)
    out = list(lines)
    text = json.dumps(record, ensure_ascii=draw(st.booleans()))
    out[index] = text.encode("utf-8", "surrogatepass")  # a lone surrogate: invalid UTF-8
    return out


def _bytes_at(draw: Draw, lines: Lines, insert: bytes) -> Lines:
    index = _pick(draw, lines)
    line = lines[index]
    at = draw(st.integers(0, len(line)))
    out = list(lines)
    out[index] = line[:at] + insert + line[at:]
    return out


def flip_byte(draw: Draw, lines: Lines) -> Lines:
    index = _pick(draw, lines)
    line = bytearray(lines[index])
    if not line:
        return lines
    at = draw(st.integers(0, len(line) - 1))
    line[at] ^= draw(st.integers(1, 255))
    return [*lines[:index], bytes(line).replace(b"\n", b" "), *lines[index + 1 :]]


def cut_line(draw: Draw, lines: Lines) -> Lines:
    index = _pick(draw, lines)
    out = list(lines)
    out[index] = lines[index][: draw(st.integers(0, len(lines[index])))]
    return out


def invalid_utf8(draw: Draw, lines: Lines) -> Lines:
    return _bytes_at(draw, lines, draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])))


def bom(draw: Draw, lines: Lines) -> Lines:
    index = draw(st.sampled_from([0, 0, _pick(draw, lines)]))
    return [*lines[:index], b"\xef\xbb\xbf" + lines[index], *lines[index + 1 :]]


def nul(draw: Draw, lines: Lines) -> Lines:
    return _bytes_at(draw, lines, b"\x00")


def blank_or_crlf(draw: Draw, lines: Lines) -> Lines:
    index = _pick(draw, lines)
    extra = draw(st.sampled_from([b"", b"   ", b"\t", b"\r", b"\x1e"]))
    return [*lines[:index], extra, *lines[index:]]


def deep_nesting(draw: Draw, lines: Lines) -> Lines:
    depth = draw(st.sampled_from([10, 150, 199, 200, 201, 1_000, 10_000]))
    key = draw(st.sampled_from(["meta", "data", "frame", "arguments", "result", "zz"]))
    index = _pick(draw, lines)
    line = lines[index]
    if not line.endswith(b"}"):
        return lines
    nested = b"[" * depth + b"1" + b"]" * depth
    out = list(lines)
    out[index] = line[:-1] + b', "' + key.encode() + b'": ' + nested + b"}"
    return out


def wrong_type(draw: Draw, lines: Lines) -> Lines:
    value = draw(st.sampled_from(WRONG_VALUES))

    def edit(record: dict[str, Any]) -> None:
        if record:
            record[draw(st.sampled_from(sorted(record)))] = value

    return _json_edit(draw, lines, edit)


def nested_wrong_type(draw: Draw, lines: Lines) -> Lines:
    value = draw(st.sampled_from(WRONG_VALUES))

    def edit(record: dict[str, Any]) -> None:
        for key in ("limits", "totals", "usage", "message", "frame"):
            if isinstance(record.get(key), dict) and record[key]:
                inner = record[key]
                inner[draw(st.sampled_from(sorted(inner)))] = value
                return

    return _json_edit(draw, lines, edit)


def unknown_field(draw: Draw, lines: Lines) -> Lines:
    def edit(record: dict[str, Any]) -> None:
        target = record
        if draw(st.booleans()) and isinstance(record.get("limits"), dict):
            target = record["limits"]
        target[draw(st.sampled_from(["zz_unknown", "Seq", "run id"]))] = 1

    return _json_edit(draw, lines, edit)


def unknown_word(draw: Draw, lines: Lines) -> Lines:
    word = draw(st.sampled_from(UNKNOWN_WORDS))
    key = draw(st.sampled_from(["status", "type", "direction", "where", "timeout_layer"]))

    def edit(record: dict[str, Any]) -> None:
        if key in record or key == "type":
            record[key] = word

    return _json_edit(draw, lines, edit)


def duplicate_line(draw: Draw, lines: Lines) -> Lines:
    index = _pick(draw, lines)
    at = draw(st.integers(0, len(lines)))
    return [*lines[:at], lines[index], *lines[at:]]


def drop_line(draw: Draw, lines: Lines) -> Lines:
    if len(lines) < 2:
        return lines
    index = _pick(draw, lines)
    return [*lines[:index], *lines[index + 1 :]]


def seq_edit(draw: Draw, lines: Lines) -> Lines:
    choice = draw(st.sampled_from(["copy", "missing", "huge", "negative", "float", "string"]))
    other = _pick(draw, lines)

    def edit(record: dict[str, Any]) -> None:
        if choice == "missing":
            record.pop("seq", None)
        elif choice == "copy":
            with contextlib.suppress(ValueError, TypeError, RecursionError, AttributeError):
                record["seq"] = json.loads(lines[other]).get("seq")
        else:
            values = {"huge": draw(st.sampled_from([2**63 - 1, 2**63, 2**64, 10**30]))}
            values |= {"negative": -1, "float": 1.0, "string": "3"}
            record["seq"] = values[choice]

    return _json_edit(draw, lines, edit)


def run_id_edit(draw: Draw, lines: Lines) -> Lines:
    value = draw(st.sampled_from([123, None, ["r"], {"id": "r"}, True, "", "OTHER"]))

    def edit(record: dict[str, Any]) -> None:
        own = record.get("run_id")
        record["run_id"] = f"{own}-other" if value == "OTHER" else value

    return _json_edit(draw, lines, edit)


def schema_version_edit(draw: Draw, lines: Lines) -> Lines:
    value = draw(st.sampled_from([0, 1, 2, 3, 99, -1, "2", True, None, 1.0]))

    def edit(record: dict[str, Any]) -> None:
        if record.get("type") == "run_start":
            record["schema_version"] = value

    return _json_edit(draw, lines, edit)


def ts_edit(draw: Draw, lines: Lines) -> Lines:
    value = draw(
        st.sampled_from(
            [
                "2026-11-30 10:00:00",
                "2026-11-30T10:00:00+05:30",
                "2026-11-30",
                "2026-13-30T10:00:00Z",
                "9999-12-31T23:59:59Z",
                "0001-01-01T00:00:00Z",
                "10000-01-01T00:00:00Z",
                "yesterday",
                1_764_496_800,
            ]
        )
    )

    def edit(record: dict[str, Any]) -> None:
        record["ts"] = value

    return _json_edit(draw, lines, edit)


MUTATIONS = [
    flip_byte,
    cut_line,
    invalid_utf8,
    bom,
    nul,
    blank_or_crlf,
    deep_nesting,
    wrong_type,
    nested_wrong_type,
    unknown_field,
    unknown_word,
    duplicate_line,
    drop_line,
    seq_edit,
    run_id_edit,
    schema_version_edit,
    ts_edit,
]


@dataclass
class Damaged:
    """A damaged trace; its repr (what Hypothesis prints for a failing case) names the seed
    and the mutations rather than the bytes, which are written out with `dump`."""

    run_id: str
    seed: str
    mutations: list[str]
    data: bytes

    def __repr__(self) -> str:
        return f"Damaged({self.seed[:12]} + {self.mutations}, {len(self.data)} bytes)"


@st.composite
def damaged_traces(draw: Draw, seeds: list[tuple[str, Lines]]) -> list[Damaged]:
    """One to three traces, each a seed under a fresh run id with a few mutations; the
    last line is sometimes cut off, as a killed writer leaves it."""
    traces: list[Damaged] = []
    for number in range(draw(st.integers(1, 3))):
        seed_id, lines = draw(st.sampled_from(seeds))
        run_id = f"fuzz{number}{seed_id[6:]}"
        lines = [line.replace(seed_id.encode(), run_id.encode()) for line in lines]
        applied = []
        for mutation in draw(st.lists(st.sampled_from(MUTATIONS), max_size=4)):
            if lines:
                lines = mutation(draw, lines)
                applied.append(mutation.__name__)
        data = b"".join(line + b"\n" for line in lines)
        if data and draw(st.integers(0, 9)) == 0:
            data = data[: draw(st.integers(0, len(data) - 1))]
            applied.append("cut_tail")
        traces.append(Damaged(run_id, seed_id, applied, data))
    return traces


# --- the oracle ------------------------------------------------------------------------


def expected_events(paths: list[Path]) -> dict[str, list[str]]:
    """What the store should hold: per file, the events the reader reads whose run is the
    file's run (the run of its first valid event); a file from a newer schema holds none."""
    expected: dict[str, list[str]] = {}
    for path in sorted(paths, key=str):
        try:
            events: list[Event] = read_trace(path).events
        except NewerSchemaError:
            continue
        if not events:
            continue
        run_id = events[0].run_id
        if run_id in expected:
            continue  # a run is read from one file; the first one (by path) keeps it
        expected[run_id] = sorted(e.model_dump_json() for e in events if e.run_id == run_id)
    return expected


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def home_with(traces: list[Damaged], hang_s: int = HANG_S) -> Iterator[tuple[Path, list[Path]]]:
    with tempfile.TemporaryDirectory(prefix="wb-fuzz-") as scratch:
        home = Path(scratch)
        folder = home / "traces"
        folder.mkdir()
        paths = []
        for trace in traces:
            path = folder / f"{trace.run_id}.jsonl"
            path.write_bytes(trace.data)
            paths.append(path)
        if os.environ.get("WORKBENCH_FUZZ_DUMP"):  # keep the files of the last case
            dump = Path(os.environ["WORKBENCH_FUZZ_DUMP"])
            shutil.rmtree(dump, ignore_errors=True)
            shutil.copytree(folder, dump)
        faulthandler.dump_traceback_later(hang_s, exit=True)
        try:
            yield home, paths
        finally:
            faulthandler.cancel_dump_traceback_later()


def check_store(store: TraceStore, expected: dict[str, list[str]]) -> None:
    admitted = {row.run_id for row in store.runs(limit=1_000)}
    assert admitted == set(expected), "runs admitted differ from the runs the reader reads"
    for run_id, events in expected.items():
        stored = sorted(e.model_dump_json() for e in store.events(run_id))
        lost = sorted(set(events) - set(stored))
        extra = sorted(set(stored) - set(events))
        assert not lost, f"valid events lost from {run_id}: {lost[:2]}"
        assert not extra, f"events admitted the reader refuses in {run_id}: {extra[:2]}"
    _, rows = store.query("SELECT count(*) FROM events")
    assert rows[0][0] == sum(len(events) for events in expected.values())


FUZZ = settings(
    max_examples=EXAMPLES,
    # CI runs the same cases every time, so a red build always names a real change; the
    # long mode (WORKBENCH_FUZZ_EXAMPLES set) explores new ones on every run.
    derandomize="WORKBENCH_FUZZ_EXAMPLES" not in os.environ,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ
@given(data=st.data())
def test_ingest_keeps_every_valid_event_and_admits_nothing_else(
    seeds: list[tuple[str, Lines]], data: st.DataObject
) -> None:
    traces = data.draw(damaged_traces(seeds))
    with home_with(traces) as (home, paths):
        expected = expected_events(paths)
        # An in-memory store: the same SQL as a file, a fraction of the cost per case.
        with TraceStore.open(":memory:") as store:
            report = store.ingest_home(home)
            for problem in report.problems:
                assert problem.startswith(str(home)) and "\n" not in problem
            check_store(store, expected)
            # Ingesting again adds nothing and raises nothing.
            assert store.ingest_home(home).new_events == 0
            check_store(store, expected)


@settings(FUZZ, max_examples=max(EXAMPLES // 3, 10))
@given(data=st.data())
def test_read_commands_answer_without_a_traceback(
    seeds: list[tuple[str, Lines]], data: st.DataObject
) -> None:
    traces = data.draw(damaged_traces(seeds))
    with home_with(traces) as (home, paths):
        expected = expected_events(paths)
        # Every run, the regression samples too (a default list folds those away).
        code, out, err = run_cli("--home", str(home), "runs", "--samples", "--json")
        assert code == 0 and "Traceback" not in err
        assert {run["run_id"] for run in json.loads(out)} == set(expected)
        for run_id in expected:
            code, out, err = run_cli("--home", str(home), "show", run_id, "--json")
            assert code == 0 and "Traceback" not in err, err
            assert json.loads(out)["run"]["run_id"] == run_id
        for run_id in list(expected)[:1]:
            code, out, err = run_cli("--home", str(home), "show", run_id)
            assert code == 0 and "Traceback" not in err, err
        code, out, err = run_cli(
            "--home", str(home), "sql", "SELECT run_id, count(*) AS n FROM events GROUP BY 1"
        )
        assert code == 0 and "Traceback" not in err, err


@FUZZ
@given(data=st.data())
def test_the_light_line_check_reads_every_line_as_the_models_do(
    seeds: list[tuple[str, Lines]], data: st.DataObject
) -> None:
    for trace in data.draw(damaged_traces(seeds)):
        assert_same_verdicts(trace.data)


# --- real sizes ------------------------------------------------------------------------

# The long mode mixes in lines of up to 40 MB and a home of a million runs; CI's cases stay
# within a few MB so they take seconds.
LONG_MODE = "WORKBENCH_FUZZ_EXAMPLES" in os.environ
BIG_LINE_MB = (4, 40) if LONG_MODE else (4, 6)


@pytest.fixture(scope="module")
def long_seed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Lines]:
    """(run id, whole lines) of a 90-turn run of the real loop: ~11,700 lines, 17 MB."""
    path = long_agent_run(tmp_path_factory.mktemp("long-run"), "long-seed")
    return "long-seed", [line for line in path.read_bytes().split(b"\n") if line]


def big_line_run(draw: Draw, number: int) -> Damaged:
    """A small run whose tool result makes one line of a drawn size in BIG_LINE_MB."""
    size = draw(st.integers(BIG_LINE_MB[0] * MIB, BIG_LINE_MB[1] * MIB))
    run_id = f"big{number}"
    with tempfile.TemporaryDirectory(prefix="wb-big-") as scratch:
        data = run_with_big_result(Path(scratch), run_id, size).read_bytes()
    return Damaged(run_id, "big", [f"line of {size:,} bytes"], data)


@settings(FUZZ, max_examples=max(EXAMPLES // 30, 3))
@given(data=st.data())
def test_ingest_at_real_sizes_keeps_every_valid_event(
    seeds: list[tuple[str, Lines]], long_seed: tuple[str, Lines], data: st.DataObject
) -> None:
    """A long run read while it grows (damaged like the others), runs with multi-MB lines
    and small damaged traces, in one home: every valid event is kept, nothing else."""
    traces = data.draw(damaged_traces(seeds))
    seed_id, lines = long_seed
    long = data.draw(damaged_traces(Seeds([(seed_id, lines)])))[0]
    traces += [long, *(big_line_run(data.draw, n) for n in range(data.draw(st.integers(0, 2))))]
    # First read while the long run is still being written, cut at a drawn byte.
    at = data.draw(st.integers(0, len(long.data)))
    with home_with(traces) as (home, paths):
        grown = home / "traces" / f"{long.run_id}.jsonl"
        grown.write_bytes(long.data[:at])
        with TraceStore.open(":memory:") as store:
            store.ingest_home(home)
            grown.write_bytes(long.data)
            report = store.ingest_home(home)
            for problem in report.problems:
                assert problem.startswith(str(home)) and "\n" not in problem
            check_store(store, expected_events(paths))


@pytest.mark.skipif(not LONG_MODE, reason="the long mode only (WORKBENCH_FUZZ_EXAMPLES set)")
@settings(FUZZ, max_examples=1)
@given(data=st.data())
def test_a_home_of_a_million_runs_with_damaged_ones_keeps_every_valid_event(
    seeds: list[tuple[str, Lines]], data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    traces = data.draw(damaged_traces(seeds))
    # Writing a million files and reading them takes minutes, not a hang.
    with home_with(traces, hang_s=3_600) as (home, paths):
        folder = home / "traces"
        for number in range(1_000_000):
            run_id = f"m{number:07}"
            (folder / f"{run_id}.jsonl").write_bytes(small_run_lines(run_id))
        expected = expected_events(paths)
        with TraceStore.open(home / "workbench.duckdb") as store:
            report = store.ingest_home(home)
            for problem in report.problems:
                assert problem.startswith(str(home)) and "\n" not in problem
            assert store.count_runs() == 1_000_000 + len(expected)
            for run_id, events in expected.items():
                assert sorted(e.model_dump_json() for e in store.events(run_id)) == events
