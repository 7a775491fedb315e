"""Annotations go where the runs go (issue 39, part 1): a bundle carries its runs'
annotations (tombstones too, redacted as the traces are) and an import keeps their authors,
once however often it is imported; two homes' annotation files merged show both authors'
marks in `show`; a bundle whose annotations are damaged or on runs it does not hold is one
line."""

from __future__ import annotations

import io
import json
import lzma
import shutil
import tarfile
from pathlib import Path

import pytest

from tests.support.demo import demo_run
from tests.support.in_process import note_json, wb
from traces.annotations import author_file
from traces.home import annotations_dir


def _bundled(
    home: Path, capsys: pytest.CaptureFixture[str], run_id: str, bundle: Path
) -> tuple[Path, str]:
    """`workbench bundle RUN -o BUNDLE`, and what it printed."""
    code, out, err = wb(home, capsys, "bundle", run_id, "-o", str(bundle))
    assert code == 0, err
    return bundle, out


def _noted_bundle(
    home: Path, capsys: pytest.CaptureFixture[str], bundle: Path, *author: str
) -> Path:
    """A bundle of the demo's completed run with one note on it (labelled `fine`)."""
    run_id = demo_run(home, "completed")
    note_json(home, capsys, run_id, "--label", "fine", *author)
    return _bundled(home, capsys, run_id, bundle)[0]


def _members(bundle: Path) -> dict[str, bytes]:
    with tarfile.open(bundle, "r:xz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def test_a_bundle_carries_the_annotations_and_the_import_keeps_their_authors(
    home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_id = demo_run(home, "duplicate-call-loop")
    other_run = demo_run(home, "completed")
    (home / "redact-patterns.txt").write_text("hunter2\n")
    kept = note_json(home, capsys, run_id, "--label", "loop", "--text", "password hunter2")
    gone = note_json(home, capsys, f"{run_id}:2", "--label", "oops", "--author", "bob")
    assert wb(home, capsys, "note", run_id, "--remove", gone["id"])[0] == 0
    note_json(home, capsys, other_run, "--label", "not bundled")

    bundle, out = _bundled(home, capsys, run_id, tmp_path / "issue.wbundle")
    assert "3 annotation record(s) on these runs included" in out
    members = _members(bundle)
    manifest = json.loads(members["manifest.json"])
    assert manifest["bundle_version"] == 2 and manifest["annotations"] == 3
    carried = [json.loads(line) for line in members["annotations.jsonl"].splitlines()]
    assert [(r["author"], r["type"]) for r in carried] == [
        ("alice", "note"), ("bob", "note"), ("alice", "remove"),
    ]  # fmt: skip
    assert b"hunter2" not in members["annotations.jsonl"]
    assert carried[0]["text"] == "password [REDACTED:pattern-1]"
    assert manifest["redacted"]["placeholders"]["pattern-1"] >= 1

    there = tmp_path / "there"
    said = []
    for _ in range(2):  # the second import adds nothing
        code, out, err = wb(there, capsys, "import", "bundle", str(bundle))
        assert code == 0, err
        said.append("  3 annotation record(s) by alice, bob" in out.splitlines())
    assert said == [True, False]
    assert len(author_file(there, "alice").read_text().splitlines()) == 2
    assert len(author_file(there, "bob").read_text().splitlines()) == 1
    code, out, _ = wb(there, capsys, "show", run_id, "--json")
    notes = json.loads(out)["annotations"]
    assert [(n["id"], n["author"], n["text"]) for n in notes] == [
        (kept["id"], "alice", "password [REDACTED:pattern-1]")
    ]
    code, out, _ = wb(there, capsys, "show", str(bundle))  # a bundle opened directly too
    assert code == 0 and "alice: [loop]" in out


def test_an_import_says_whose_annotations_it_added(
    home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bundle = _noted_bundle(home, capsys, tmp_path / "one.wbundle", "--author", "dana")
    code, out, _ = wb(tmp_path / "there", capsys, "import", "bundle", str(bundle), "--json")
    assert code == 0
    assert (json.loads(out)["annotations"], json.loads(out)["authors"]) == (1, ["dana"])


def _rewritten(bundle: Path, out: Path, annotations: bytes) -> Path:
    """`bundle` with other annotation lines, its manifest's digest made to match."""
    import hashlib

    members = _members(bundle)
    members["annotations.jsonl"] = annotations
    manifest = json.loads(members["manifest.json"])
    manifest["files"]["annotations.jsonl"] = {
        "size": len(annotations),
        "sha256": hashlib.sha256(annotations).hexdigest(),
    }
    members["manifest.json"] = json.dumps(manifest).encode()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    out.write_bytes(lzma.compress(raw.getvalue(), format=lzma.FORMAT_XZ))
    return out


def test_a_bundle_with_bad_annotations_is_one_line_and_imports_nothing(
    home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bundle = _noted_bundle(home, capsys, tmp_path / "good.wbundle")
    stranger = {
        "id": "20261207000000-00000000",
        "author": "mallory",
        "run_id": "someone-elses-run",
        "type": "note",
        "labels": ["x"],
    }
    cases = {
        b"{not json\n": "annotations.jsonl line 1: not valid JSON",
        json.dumps(stranger).encode() + b"\n": "annotations.jsonl line 1 is on run "
        "'someone-elses-run', which the bundle does not hold",
    }
    for n, (lines, said) in enumerate(cases.items()):
        bad = _rewritten(bundle, tmp_path / f"bad{n}.wbundle", lines)
        there = tmp_path / f"there{n}"
        code, _, err = wb(there, capsys, "import", "bundle", str(bad))
        assert code == 2 and len(err.splitlines()) == 1 and said in err, err
        assert not annotations_dir(there).exists()


def test_two_homes_annotation_files_merged_show_both_authors_marks(
    home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_id = demo_run(home, "duplicate-call-loop")
    other = tmp_path / "other"
    shutil.copytree(home, other)
    note_json(home, capsys, f"{run_id}:2", "--label", "mine")
    note_json(other, capsys, f"{run_id}:2", "--label", "theirs", "--author", "carol")
    shutil.copy(author_file(other, "carol"), author_file(home, "carol"))
    code, out, _ = wb(home, capsys, "show", run_id)
    assert code == 0
    turn_two = [line for line in out.splitlines() if line.startswith("── turn ")][1]
    assert turn_two.endswith(" ✎2")
    listed = out.split("annotations (2):\n", 1)[1]
    assert "alice: [mine]" in listed and "carol: [theirs]" in listed
