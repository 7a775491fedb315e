"""`workbench note` on the demo's runs, through the CLI on a real home: notes on a run, a
turn and a tool call, one file per author, tombstones, damaged lines, re-ingest, and the
annotations in `runs` filters, `show`, export and bundles."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.demo import demo_run
from tests.support.in_process import note_json, wb, wb_json
from traces.annotations import ANNOTATION_VERSION
from traces.home import annotations_dir


def sql(home: Path, capsys: pytest.CaptureFixture[str], query: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = wb_json(home, capsys, "sql", query)
    return rows


def test_notes_on_a_run_a_turn_and_a_call_go_to_one_file_per_author(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = demo_run(home, "duplicate-call-loop")
    on_run = note_json(
        home, capsys, run_id[:8], "--label", "loop", "--score", "helpful=0.25", "--text", "loops"
    )
    assert on_run["run_id"] == run_id and on_run["author"] == "alice"
    assert on_run["labels"] == ["loop"] and on_run["scores"] == {"helpful": 0.25}
    assert "turn" not in on_run and on_run["schema_version"] == ANNOTATION_VERSION
    on_turn = note_json(home, capsys, f"{run_id[:8]}:2", "--label", "repeat", "--author", "bob")
    on_call = note_json(home, capsys, f"{run_id}:1:call_s1_0", "--score", "relevant=1")
    assert (on_turn["turn"], on_turn["author"]) == (2, "bob")
    assert (on_call["turn"], on_call["call_id"]) == (1, "call_s1_0")

    folder = annotations_dir(home)
    assert sorted(p.name for p in folder.iterdir()) == ["alice.jsonl", "bob.jsonl"]
    assert len((folder / "alice.jsonl").read_text().splitlines()) == 2

    code, out, _ = wb(home, capsys, "note", run_id[:8], "--list")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == [
        on_run["id"],
        on_turn["id"],
        on_call["id"],
    ]
    assert f"{on_call['id']}  turn 1 call call_s1_0  alice: relevant=1" in out


def test_a_target_that_is_not_there_or_an_empty_note_is_one_line(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = demo_run(home, "duplicate-call-loop")
    cases = [
        ([f"{run_id[:8]}:9", "--label", "x"], "has no turn 9"),
        ([f"{run_id[:8]}:1:nope", "--label", "x"], "has no tool call 'nope'"),
        (["zzzz", "--label", "x"], "no run id starts with 'zzzz'"),
        ([run_id[:8]], "a note needs at least one --label, --score or --text"),
        ([run_id[:8], "--score", "helpful"], "give NAME=VALUE with a number"),
        ([f"{run_id[:8]}:x", "--label", "x"], "the turn must be a number"),
        ([run_id[:8], "--remove", "nope"], "has no annotation 'nope'"),
    ]
    for argv, said in cases:
        code, out, err = wb(home, capsys, "note", *argv)
        assert code == 2 and out == "", argv
        assert said in err and len(err.splitlines()) == 1, err
    assert not annotations_dir(home).exists()


def test_a_tombstone_removes_a_note_without_editing_the_file(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = demo_run(home, "completed")
    kept = note_json(home, capsys, run_id, "--label", "good")
    gone = note_json(home, capsys, run_id, "--label", "wrong")
    path = annotations_dir(home) / "alice.jsonl"
    before = path.read_text()
    code, out, err = wb(home, capsys, "note", run_id[:8], "--remove", gone["id"], "--author", "bob")
    assert code == 0, err
    assert f"removed {gone['id']} from run {run_id[:12]}" in out
    assert path.read_text() == before  # bob's tombstone is in bob's file
    tomb = json.loads((annotations_dir(home) / "bob.jsonl").read_text())
    assert tomb["type"] == "remove" and tomb["removes"] == gone["id"]
    listed = [row["id"] for row in sql(home, capsys, "SELECT id FROM annotations")]
    assert listed == [kept["id"]]
    code, _, err = wb(home, capsys, "note", run_id[:8], "--remove", gone["id"])
    assert code == 2 and "removed already" in err


def test_a_damaged_line_is_one_problem_and_nothing_else_is_lost_nor_read_twice(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = demo_run(home, "completed")
    first = note_json(home, capsys, run_id, "--label", "one")
    path = annotations_dir(home) / "alice.jsonl"
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "note", "id": "broken\n')  # a line cut and damaged
        handle.write(json.dumps({**first, "id": "no-author", "author": ""}) + "\n")
    # The next command that reads the store says so, a line each, and goes on.
    code, out, err = wb(home, capsys, "note", run_id, "--label", "three", "--json")
    assert code == 0
    third = json.loads(out)
    assert err.splitlines() == [
        f"workbench: {path.resolve()}:2: not valid JSON (Unterminated string starting at: "
        "line 1 column 24 (char 23)); line skipped",
        f"workbench: {path.resolve()}:3: note.author: String should have at least 1 character; "
        "line skipped",
    ]
    ids = [row["id"] for row in sql(home, capsys, "SELECT id FROM annotations ORDER BY ts")]
    assert ids == [first["id"], third["id"]]
    # Reading again adds nothing and says nothing again.
    rows = sql(home, capsys, "SELECT count(*) AS n FROM annotation_rows")
    code, _, err = wb(home, capsys, "runs")
    assert "alice.jsonl" not in err
    assert sql(home, capsys, "SELECT count(*) AS n FROM annotation_rows") == rows == [{"n": 4}]


def test_two_homes_annotation_files_merge_as_files(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = demo_run(home, "completed")
    other = tmp_path / "other"
    shutil.copytree(home, other)
    mine = note_json(home, capsys, run_id, "--label", "mine")
    theirs = note_json(other, capsys, run_id, "--label", "theirs", "--author", "carol")
    shutil.copy(annotations_dir(other) / "carol.jsonl", annotations_dir(home) / "carol.jsonl")
    # The same file twice (copied back and forth) counts each annotation once.
    shutil.copy(annotations_dir(home) / "alice.jsonl", annotations_dir(home) / "alice-copy.jsonl")
    rows = sql(home, capsys, "SELECT id, author FROM annotations ORDER BY ts")
    assert rows == [
        {"id": mine["id"], "author": "alice"},
        {"id": theirs["id"], "author": "carol"},
    ]


def listed(home: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> set[str]:
    code, out, err = wb(home, capsys, "runs", "--json", "--limit", "500", *flags)
    assert code == 0, err
    return {row["run_id"] for row in json.loads(out)}


def test_runs_filter_by_label_unreviewed_and_score_in_sql(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    every = listed(home, capsys)
    loop, done = demo_run(home, "duplicate-call-loop"), demo_run(home, "completed")
    assert listed(home, capsys, "--unreviewed") == every
    note_json(home, capsys, f"{loop}:1:call_s1_0", "--label", "wrong-tool")
    low = note_json(home, capsys, done, "--label", "fine", "--score", "helpful=0.3")
    note_json(home, capsys, done, "--score", "helpful=0.9", "--author", "bob")
    assert listed(home, capsys, "--label", "wrong-tool") == {loop}
    assert listed(home, capsys, "--label", "nobody-used-it") == set()
    assert listed(home, capsys, "--unreviewed") == every - {loop, done}
    assert listed(home, capsys, "--score", "helpful<0.5") == {done}
    assert listed(home, capsys, "--score", "helpful >= 0.95") == set()
    assert listed(home, capsys, "--label", "fine", "--score", "helpful>0.5") == {done}
    # A removed note no longer counts.
    assert wb(home, capsys, "note", done, "--remove", low["id"])[0] == 0
    assert listed(home, capsys, "--label", "fine") == set()
    assert listed(home, capsys, "--score", "helpful<0.5") == set()
    code, out, _ = wb(home, capsys, "runs", "--label", "fine")
    assert code == 0 and out == "no runs match these filters\n"
    with pytest.raises(SystemExit) as exited:
        wb(home, capsys, "runs", "--score", "helpful")
    assert exited.value.code == 2
    assert "is not a score filter: give NAME<VALUE" in capsys.readouterr().err


GOLDEN = Path(__file__).parents[1] / "fixtures" / "annotations"


def test_golden_annotation_files_of_every_version_read_back_and_ingest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from traces.annotations import ANNOTATION_VERSIONS, read_annotation

    assert sorted(p.name for p in GOLDEN.iterdir()) == [f"v{n}" for n in ANNOTATION_VERSIONS]
    home = tmp_path / "home"
    annotations_dir(home).mkdir(parents=True)
    for path in GOLDEN.glob("v*/*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = read_annotation(line)
            # Read back as the current version, with nothing else changed.
            written = json.loads(line) | {"schema_version": record.schema_version}
            assert json.loads(record.model_dump_json(exclude_none=True)) == written
        shutil.copy(path, annotations_dir(home) / f"{path.parent.name}-{path.name}")
    rows = sql(home, capsys, "SELECT id, turn, call_id, labels FROM annotations ORDER BY id")
    assert rows == [
        {"id": "20261201093000-0a1b2c3d", "turn": None, "call_id": None, "labels": ["loops"]},
        {"id": "20261201093200-2c3d4e5f", "turn": 1, "call_id": "call_s1_0", "labels": []},
        {"id": "20261202100000-3d4e5f60", "turn": None, "call_id": None, "labels": []},
    ]


def test_show_marks_annotated_turns_and_calls_and_export_carries_the_notes(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = demo_run(home, "duplicate-call-loop")
    on_run = note_json(home, capsys, run_id, "--label", "loop", "--text", "asks twice")
    note_json(home, capsys, f"{run_id}:2", "--label", "repeat", "--author", "bob")
    note_json(home, capsys, f"{run_id}:1:call_s1_0", "--score", "relevant=1")
    code, out, _ = wb(home, capsys, "show", run_id[:8])
    assert code == 0
    lines = out.splitlines()
    assert lines[0].endswith(" ✎1")  # the run
    assert [line for line in lines if line.startswith("── turn ")][1].endswith(" ✎1")
    assert any(" call_s1_0 " in line and line.endswith(" ✎1") for line in lines)
    listed = lines[lines.index("annotations (3):") + 1 :]
    assert listed[0] == f'  {on_run["id"]}  run             alice: [loop] "asks twice"'
    assert "bob: [repeat]" in listed[1] and "alice: relevant=1" in listed[2]

    code, out, _ = wb(home, capsys, "show", run_id, "--json")
    notes = json.loads(out)["annotations"]
    assert [(n["turn"], n["call_id"], n["author"]) for n in notes] == [
        (None, None, "alice"),
        (2, None, "bob"),
        (1, "call_s1_0", "alice"),
    ]
    code, out, _ = wb(home, capsys, "export", run_id, "--format", "md")
    assert code == 0
    assert out.endswith(
        "## Annotations\n\n- **run** (alice): `loop` — asks twice\n- **turn 2** (bob): "
        "`repeat`\n- **turn 1 call call_s1_0** (alice): relevant=1\n"
    )
    code, out, _ = wb(home, capsys, "export", run_id, "--format", "json")
    assert [n["id"] for n in json.loads(out)["annotations"]] == [n["id"] for n in notes]


def test_ingest_of_a_whole_home_reads_its_traces_and_leaves_its_annotations_to_notes(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = demo_run(home, "completed")
    note_json(home, capsys, run_id, "--label", "checked")
    code, _out, err = wb(home, capsys, "ingest", str(home))
    assert code == 0, err
    assert err == ""  # not "unknown event type 'note'" for the annotations file
    assert run_id[:12] in "".join(listed(home, capsys, "--label", "checked"))
