"""A review reaches a teammate through the lake: the annotations on a run (labels, scores,
notes, a judge's scores, tombstones) pushed from one home come along when another home
pulls the run, as annotation files of their authors, once however often it pulls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.lake.test_lake_reads import ok
from tests.support.demo import demo_run
from traces.annotations import (
    ANNOTATION_VERSION,
    JudgeRef,
    Note,
    append_annotation,
    author_file,
    new_id,
)

pytestmark = pytest.mark.lake


def _notes(home: Path, run: str) -> list[tuple[str, str, list[str], object, object]]:
    shown = json.loads(ok(home, "show", run, "--json"))["annotations"]
    return [(n["id"], n["author"], n["labels"], n["scores"], n["text"]) for n in shown]


def test_a_pulled_run_brings_its_annotations(demo_home: Path, lake_url: str, tmp_path: Path):
    run = demo_run(demo_home, "tool-error-recovered")
    ok(demo_home, "note", run, "--label", "flaky", "--score", "quality=0.25",
       "--text", "reads a missing file first", "--author", "alice")  # fmt: skip
    gone = json.loads(ok(demo_home, "note", f"{run}:1", "--label", "oops", "--author", "bob",
                         "--json"))  # fmt: skip
    ok(demo_home, "note", run, "--remove", gone["id"], "--author", "alice")
    judge = JudgeRef(rubric="helpful", version=1, run="judge-run-1")
    append_annotation(
        demo_home,
        Note(id=new_id(), author="judge:helpful", run_id=run, scores={"helpful": 1.0},
             text="answered", judge=judge),
    )  # fmt: skip
    ok(demo_home, "note", demo_run(demo_home, "completed"), "--label", "other run")
    ok(demo_home, "push", "--all", "--lake", lake_url)

    other = tmp_path / "laptop"
    (other / "traces").mkdir(parents=True)
    said = ok(other, "pull", run[:10], "--lake", lake_url)
    assert said.startswith("pulled 1 run (") and "; 4 annotations" in said, said
    assert _notes(other, run) == _notes(demo_home, run) and len(_notes(other, run)) == 2
    labelled = json.loads(ok(other, "runs", "--label", "flaky", "--json"))
    assert [row["run_id"] for row in labelled] == [run]
    # Each author's records in that author's file, in the contract's own lines.
    assert author_file(other, "bob").read_text() == author_file(demo_home, "bob").read_text()
    alice = author_file(other, "alice").read_text().splitlines()
    assert [json.loads(line)["type"] for line in alice] == ["note", "remove"]
    judged = json.loads(author_file(other, "judge:helpful").read_text())
    assert judged["judge"] == judge.model_dump() and judged["schema_version"] >= 2

    files = {path.name: path.read_bytes() for path in (other / "annotations").iterdir()}
    again = ok(other, "pull", run, "--lake", lake_url)
    assert again.startswith("pulled 0 runs") and "annotation" not in again, again
    assert {path.name: path.read_bytes() for path in (other / "annotations").iterdir()} == files

    # A note added after the pull comes along with the next pull of the run it is on.
    later = json.loads(ok(demo_home, "note", run, "--text", "fixed in 1.2", "--json"))
    ok(demo_home, "push", "--all", "--lake", lake_url)
    said = ok(other, "pull", run, "--lake", lake_url)
    assert "1 already there" in said and "; 1 annotation" in said, said
    assert later["id"] in [note[0] for note in _notes(other, run)]


def test_an_annotation_a_newer_workbench_pushed_stays_in_the_lake_and_is_said(
    demo_home: Path, lake_url: str, tmp_path: Path
) -> None:
    from traces.store.lake.config import from_url
    from traces.store.lake.connect import connect

    run = demo_run(demo_home, "completed")
    kept = json.loads(ok(demo_home, "note", run, "--label", "fine", "--json"))
    ok(demo_home, "push", run, "--lake", lake_url)
    # What a newer workbench's push of its own note on the run leaves in the lake.
    with connect(from_url(lake_url), read_only=False) as lake:
        lake.execute(
            "INSERT INTO lake.annotation_rows SELECT * REPLACE ('newer-1' AS id, "
            "json_merge_patch(record, json_object('id', 'newer-1', 'schema_version', $v)) "
            "AS record) FROM lake.annotation_rows",
            {"v": ANNOTATION_VERSION + 1},
        )
    other = tmp_path / "laptop"
    said = ok(other, "pull", run, "--lake", lake_url)
    assert "; 1 annotation;" in said and "1 annotation left in the lake: written by a newer" in said
    assert [note[0] for note in _notes(other, run)] == [kept["id"]]
