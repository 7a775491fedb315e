"""Each kind of damage the fuzzer explores, as one plain case: a damaged trace, store or
home gives one clear line per problem, never a traceback, and every valid event is kept."""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from traces.reader import read_trace
from traces.store import StoreCorruptError, StoreReadOnlyError, TraceStore
from workbench.cli import main

CLI = "import sys; from workbench.cli import main; sys.exit(main())"
# what the progress bar writes off a terminal once ingest takes over a second (a loaded machine)
PROGRESS_LINE = re.compile(r"workbench: \d+% ")


def golden_lines(golden_dir: Path, name: str = "0aff3b5f0c7255e087e7f9bf8e1d13c9") -> list[bytes]:
    return (golden_dir / "v1" / f"{name}.jsonl").read_bytes().splitlines()


def edit(line: bytes, **fields: object) -> bytes:
    return json.dumps(json.loads(line) | fields).encode()


def write(folder: Path, name: str, lines: list[bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def ingest_home(home: Path) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", CLI, "--home", str(home), "runs", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def golden(golden_dir: Path) -> Path:
    return golden_dir.parent


def test_one_bad_file_takes_down_nothing_else(wb_home: Path, golden: Path) -> None:
    lines = golden_lines(golden)
    folder = wb_home / "traces"
    write(folder, "good", lines)
    invalid = [b"\xff\xfe" + lines[0], lines[1][:40] + b"\xc3\x28" + lines[1][40:], *lines[2:]]
    write(folder, "bad-utf8", [line.replace(b"0aff3b5f", b"bad0bad0") for line in invalid])
    code, out, err = ingest_home(wb_home)
    assert code == 0 and "Traceback" not in err, err
    runs = {run["run_id"]: run for run in json.loads(out)}
    assert len(runs) == 2
    assert f"{folder / 'bad-utf8.jsonl'}:1: not valid UTF-8" in err
    assert f"{folder / 'bad-utf8.jsonl'}:2: not valid UTF-8" in err
    bad_run = next(run_id for run_id in runs if run_id.startswith("bad0bad0"))
    assert runs[bad_run]["status"] == "cancelled"  # every line after the bad ones is kept
    for command in (["show", bad_run], ["sql", "SELECT count(*) FROM events"]):
        proc = subprocess.run(
            [sys.executable, "-c", CLI, "--home", str(wb_home), *command],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_bom_on_the_first_line_keeps_the_run_start(wb_home: Path, golden: Path) -> None:
    lines = golden_lines(golden)
    path = write(wb_home / "traces", "bom", [b"\xef\xbb\xbf" + lines[0], *lines[1:]])
    assert read_trace(path).events[0].type == "run_start"
    with TraceStore.for_home(wb_home) as store:
        assert store.ingest_home(wb_home).problems == []
        run_id = json.loads(lines[0])["run_id"]
        assert store.run(run_id).task == "List the project root."
        assert store.count_events(run_id) == len(lines)


@pytest.mark.parametrize("seq", [2**63, 2**64, 10**30, -1])
def test_seq_out_of_range_is_one_refused_line(wb_home: Path, golden: Path, seq: int) -> None:
    lines = golden_lines(golden)
    lines[3] = edit(lines[3], seq=seq)
    path = write(wb_home / "traces", "seq", lines)
    with TraceStore.for_home(wb_home) as store:
        report = store.ingest_home(wb_home)
        assert [p.split(": ", 1)[0] for p in report.problems] == [f"{path}:4"]
        assert store.count_events(json.loads(lines[0])["run_id"]) == len(lines) - 1


@pytest.mark.parametrize("run_id", [123, None, ["r"], {"id": "r"}, True])
def test_non_string_run_id_on_the_first_line_loses_only_that_line(
    wb_home: Path, golden: Path, run_id: object
) -> None:
    lines = golden_lines(golden)
    own = json.loads(lines[0])["run_id"]
    lines[0] = edit(lines[0], run_id=run_id)
    path = write(wb_home / "traces", "rid", lines)
    with TraceStore.for_home(wb_home) as store:
        report = store.ingest_home(wb_home)
        assert [p.split(": ", 1)[0] for p in report.problems] == [f"{path}:1"]
        assert "run_id" in report.problems[0]
        assert store.count_events(own) == len(lines) - 1


@pytest.mark.parametrize(
    ("index", "fields", "why"),
    [
        (10, {"ok": "maybe"}, "ok: Input should be a valid boolean"),
        (12, {"status": "exploded"}, "status: Input should be"),
        (9, {"zz_unknown": 1}, "unknown field 'zz_unknown'"),
        (1, {"stream": "true"}, "stream: Input should be a valid boolean"),
        (3, {"turn": 2**31}, "turn: Input should be less than 2147483648"),
        (2, {"data": {"x": json.loads("[" * 150 + "]" * 150)}}, None),
        (0, {"limits": {"max_turns": 4, "zz": 1}}, "unknown field 'limits.zz'"),
        # a message that is not JSON text once read as a string: the search text of a
        # response reads its content, which must not fail the whole file
        (8, {"message": "maybe"}, "message: Input should be an object"),
        (8, {"message": ""}, "message: Input should be an object"),
    ],
)
def test_rows_the_event_models_refuse_are_not_admitted(
    wb_home: Path,
    golden: Path,
    capsys: pytest.CaptureFixture[str],
    index: int,
    fields: dict[str, object],
    why: str | None,
) -> None:
    lines = golden_lines(golden)
    lines[index] = edit(lines[index], **fields)
    if why is None:  # nesting too deep for the event models to read
        lines[index] = lines[index][:-1] + b', "meta": ' + b"[" * 300 + b"]" * 300 + b"}"
        why = "not valid JSON (recursion limit exceeded"
    path = write(wb_home / "traces", "refused", lines)
    run_id = json.loads(lines[0])["run_id"]
    assert main(["show", run_id, "--json"]) == 0
    out = capsys.readouterr()
    assert f"{path}:{index + 1}: {why}" in out.err
    assert json.loads(out.out)["run"]["run_id"] == run_id
    with TraceStore.for_home(wb_home, read_only=True) as store:
        assert store.count_events(run_id) == len(lines) - 1
        assert index not in [event.seq for event in store.events(run_id)]


def test_a_symlink_loop_in_the_traces_folder_is_walked_once(wb_home: Path, golden: Path) -> None:
    folder = wb_home / "traces"
    write(folder / "sub", "one", golden_lines(golden))
    (folder / "sub" / "loop").symlink_to(folder)
    (folder / "dangling.jsonl").symlink_to(folder / "missing.jsonl")
    code, out, err = ingest_home(wb_home)
    assert code == 0 and "Traceback" not in err, err
    assert len(json.loads(out)) == 1


def test_a_corrupt_block_is_not_reported_as_in_use(tmp_path: Path, golden_dir: Path) -> None:
    db = tmp_path / "w.duckdb"
    with TraceStore.open(db) as store:
        store.ingest([golden_dir])
    data = bytearray(db.read_bytes())
    for offset in range(16_384, len(data), 4096):
        data[offset : offset + 128] = b"\xde\xad" * 64
    db.write_bytes(bytes(data))
    with pytest.raises(StoreCorruptError) as caught, TraceStore.open(db, wait_s=30) as store:
        store.count_runs()
    assert "in use" not in str(caught.value) and "move it aside" in str(caught.value)


def test_a_file_size_limit_during_ingest_is_one_line(wb_home: Path, golden_dir: Path) -> None:
    for path in golden_dir.glob("*.jsonl"):
        shutil.copy(path, wb_home / "traces" / path.name)

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    proc = subprocess.run(
        [sys.executable, "-c", CLI, "--home", str(wb_home), "ingest", str(wb_home / "traces")],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit_file_size,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [
        line
        for line in proc.stderr.splitlines()
        if "cut off" not in line and not PROGRESS_LINE.match(line)
    ]
    assert len(errors) == 1 and "could not write" in errors[0], proc.stderr


def test_read_commands_still_read_a_read_only_home(
    read_only_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(StoreReadOnlyError):
        TraceStore.for_home(read_only_home)
    assert main(["--home", str(read_only_home), "runs", "--json"]) == 0
    out = capsys.readouterr()
    assert len(json.loads(out.out)) == 4
    assert "without ingesting new traces" in out.err and "Traceback" not in out.err
    assert main(["--home", str(read_only_home), "sql", "SELECT count(*) AS n FROM runs"]) == 0
    assert "4" in capsys.readouterr().out
    assert main(["--home", str(read_only_home), "ingest", str(read_only_home)]) == 2
    assert "cannot be written" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["demo", "--no-tui"], ["run", "say hi", "--model", "m"]])
def test_run_and_demo_on_a_home_they_cannot_write_are_one_line(
    read_only_home: Path, tmp_path: Path, command: list[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for home in (read_only_home, blocker / "home"):
        proc = subprocess.run(
            [sys.executable, "-c", CLI, "--home", str(home), *command],
            capture_output=True,
            text=True,
            timeout=120,
            env=os.environ | {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "k"},
        )
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        assert proc.stderr.count("\n") == 1 and "--home" in proc.stderr, proc.stderr


def test_show_prints_valid_events_of_unusual_shape(
    wb_home: Path, golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = golden_lines(golden)
    for index, line in enumerate(lines):
        record = json.loads(line)
        if record["type"] == "model_response":
            record["message"]["content"] = [{"type": "text", "text": "in parts"}]
        if record["type"] == "model_request":
            record["tools"] = [{"function": "not an object"}, {"name": "flat"}]
        lines[index] = json.dumps(record).encode()
    write(wb_home / "traces", "odd", lines)
    run_id = json.loads(lines[0])["run_id"]
    assert main(["show", run_id]) == 0
    assert "in parts" in capsys.readouterr().out
    assert main(["show", run_id, "--json"]) == 0
    tools = json.loads(capsys.readouterr().out)["chain"]["turns"][0]["request"]["tools"]
    assert tools == [None, "flat"]


def test_a_trace_deleted_while_ingest_runs_is_skipped_with_a_note(
    wb_home: Path, golden_dir: Path
) -> None:
    """Deleted between the look for new traces and their reading: one note, not a failed
    ingest with advice about a full disk."""
    sources = sorted(golden_dir.glob("*.jsonl"))[:3]
    paths = [shutil.copy(source, wb_home / "traces" / source.name) for source in sources]
    doomed = Path(paths[1])

    def delete_on_reading(what: str, done: float) -> None:
        if what.startswith("reading") and doomed.exists():
            doomed.unlink()

    with TraceStore.for_home(wb_home) as store:
        report = store.ingest_home(wb_home, delete_on_reading)
        assert report.problems == [f"{doomed}: gone while being ingested; skipped"]
        kept = {row.run_id for row in store.runs()}
    assert kept == {Path(path).stem for path in paths if Path(path) != doomed}


@pytest.mark.parametrize(
    ("index", "spelling"), [(0, b"run_id"), (2, b"run_id"), (2, b"run\\u005fid")]
)
def test_a_line_naming_its_run_twice_is_one_problem_line(
    wb_home: Path, golden: Path, index: int, spelling: bytes
) -> None:
    """JSON readers differ on which of two values of a key counts: such a line is refused
    (by the reader and the store alike), and the rest of its file goes in; so is one that
    spells the key the second time with an escape."""
    lines = golden_lines(golden)
    own = json.loads(lines[0])["run_id"]
    lines[index] = lines[index][:-1] + b', "' + spelling + b'": "someone-else"}'
    path = write(wb_home / "traces", "twice", lines)
    why = "the key 'run_id' is given twice (which value counts is ambiguous)"
    with TraceStore.for_home(wb_home) as store:
        report = store.ingest_home(wb_home)
        assert report.problems == [f"{path}:{index + 1}: {why}"]
        assert store.count_events(own) == len(lines) - 1
    assert read_trace(path).problems == [f"{path}:{index + 1}: {why}"]
