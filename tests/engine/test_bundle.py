"""`workbench bundle`: one file that replays runs in a fresh home with no model and no
network; `import bundle`, and show/replay/diff/the TUI opening a bundle directly. A bundle
is hostile input: every bad one is one line, exit 2, and nothing is written."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import lzma
import tarfile
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.engine.engine_support import THREE_TURNS, Project, cli
from traces.home import traces_dir
from traces.store import TraceStore
from workbench.cli import main


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def demo_home(tmp_path: Path) -> Path:
    home = tmp_path / "made-here"
    assert _run("--home", str(home), "demo", "--no-tui")[0] == 0
    return home


def _members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:xz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def _by_status(home: Path) -> dict[str, str]:
    with TraceStore.for_home(home) as store:
        return {run.status: run.run_id for run in store.runs()}


def test_a_bundle_made_in_one_home_replays_in_a_fresh_home_with_no_model(
    demo_home: Path, tmp_path: Path
) -> None:
    parent = _by_status(demo_home)["completed"]
    before = set(traces_dir(demo_home).glob("*.jsonl"))
    # An offline fork: the demo ships its fork model; no model is configured here.
    code, _, err = _run(
        "--home", str(demo_home), "fork", parent, "--turn", "1", "--system", "Be brief.",
        "--quiet",
    )  # fmt: skip
    assert code == 0, err
    (fork,) = (
        p.stem
        for p in set(traces_dir(demo_home).glob("*.jsonl")) - before
        if json.loads(p.read_text().splitlines()[0]).get("parent_run_id") == parent
    )
    bundle = tmp_path / "issue.wbundle"
    code, out, err = _run("--home", str(demo_home), "bundle", fork, "-o", str(bundle))
    assert code == 0, err
    assert "1 run(s) and 1 fork parent(s)" in out

    members = _members(bundle)
    manifest = json.loads(members["manifest.json"])
    assert manifest["runs"] == [fork] and manifest["parents"] == [parent]
    assert manifest["bundle_version"] == 1 and manifest["schema_version"] >= 3
    # Nothing else from the home: the two traces, their tool schemas, the fork model script.
    assert sorted(members) == sorted(
        [
            "manifest.json",
            "tools.json",
            f"traces/{fork}.jsonl",
            f"traces/{parent}.jsonl",
            f"scripts/{fork}.json",
            f"scripts/{parent}.json",
        ]
    )
    assert json.loads(members["tools.json"])[fork][0]["function"]["name"]

    fresh = tmp_path / "somewhere-else"
    code, out, err = _run("--home", str(fresh), "import", "bundle", str(bundle))
    assert code == 0, err
    assert f"imported 2 run(s) into {fresh}" in out
    for run_id in (parent, fork):
        code, out, err = _run("--home", str(fresh), "replay", run_id)
        assert code == 0, out + err
        assert "identical decision chain" in out
    # The imported offline model script still forks the run with no model configured (on a
    # folder of the recipient's choosing: a bundle names none).
    code, _, err = _run(
        "--home", str(fresh), "fork", parent, "--turn", "1", "--quiet", "--root", str(tmp_path)
    )  # fmt: skip
    assert code == 0, err
    assert "offline model script" in err and str(fresh) in err
    # Importing again adds nothing.
    code, out, _ = _run("--home", str(fresh), "import", "bundle", str(bundle))
    assert code == 0 and "imported 0 run(s)" in out and "2 already there" in out


def test_show_replay_and_diff_open_a_bundle_directly(demo_home: Path, tmp_path: Path) -> None:
    runs = _by_status(demo_home)
    bundle = tmp_path / "two.wbundle"
    assert _run("--home", str(demo_home), "bundle", runs["completed"], runs["max_turns"],
                "-o", str(bundle))[0] == 0  # fmt: skip
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    code, out, _ = _run("--home", str(elsewhere / "no-home"), "show", str(bundle))
    assert code == 0
    assert f"run {runs['completed']}" in out and f"run {runs['max_turns']}" in out
    code, out, _ = _run("replay", str(bundle))
    assert code == 0 and out.count("identical decision chain") == 2
    code, out, _ = _run("diff", str(bundle), "--chain")
    assert code == 1 and "first divergence" in out.lower()
    assert not (elsewhere / "no-home").exists()  # opening a bundle writes no home


def test_the_repeated_history_is_kept_once(demo_home: Path, tmp_path: Path) -> None:
    runs = _by_status(demo_home)
    parent = runs["max_turns"]
    assert _run("--home", str(demo_home), "fork", parent, "--turn", "2", "--quiet")[0] in (0, 1)
    fork = next(
        p
        for p in traces_dir(demo_home).glob("*.jsonl")
        if json.loads(p.read_text().splitlines()[0]).get("parent_run_id") == parent
    )
    alone, both = tmp_path / "alone.wbundle", tmp_path / "both.wbundle"
    assert _run("--home", str(demo_home), "bundle", parent, "-o", str(alone))[0] == 0
    assert _run("--home", str(demo_home), "bundle", fork.stem, "-o", str(both))[0] == 0
    raw = sum(len(body) for name, body in _members(both).items() if name.startswith("traces/"))
    # Compressed as one stream: the fork, which repeats its parent's history, costs little.
    assert both.stat().st_size < raw / 4
    assert both.stat().st_size < alone.stat().st_size * 1.5


async def test_secrets_stay_redacted_and_the_manifest_says_what(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, result = await project.record(THREE_TURNS, task="Use token-12345678 for the port")
    assert "token-12345678" in path.read_text()  # recorded before the pattern was set
    (project.home / "redact-patterns.txt").write_text("token-[0-9]{8}\n", encoding="utf-8")
    bundle = tmp_path / "r.wbundle"
    code = await cli("--home", str(project.home), "bundle", result.run_id, "-o", str(bundle))
    assert code == 0
    members = _members(bundle)
    assert all(b"token-12345678" not in body for body in members.values())
    redacted = json.loads(members["manifest.json"])["redacted"]
    assert redacted["placeholders"]["pattern-1"] >= 1 and redacted["home_patterns"] == 1
    assert "pattern-1" in capsys.readouterr().out


# --- hostile bundles -------------------------------------------------------------------


def _tar_xz(path: Path, entries: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, body in entries:
            tar.addfile(info, io.BytesIO(body) if info.isfile() else None)
    path.write_bytes(lzma.compress(raw.getvalue()))
    return path


def _file(name: str, body: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(body)
    return info, body


def _manifest(files: dict[str, bytes], **changes: Any) -> bytes:
    manifest = {
        "format": "workbench-bundle",
        "bundle_version": 1,
        "schema_version": 3,
        "runs": [],
        "parents": [],
        "files": {
            n: {"size": len(b), "sha256": hashlib.sha256(b).hexdigest()} for n, b in files.items()
        },
    }
    return json.dumps(manifest | changes).encode()


def _bomb(path: Path) -> Path:
    # The header says 1 TiB follows; reading stops at the header, before any of it.
    info = tarfile.TarInfo("traces/bomb.jsonl")
    info.size = 1 << 40
    header = info.tobuf(tarfile.PAX_FORMAT)
    path.write_bytes(lzma.compress(header + b"\0" * (1 << 20)))
    return path


def _symlink(path: Path) -> Path:
    link = tarfile.TarInfo("traces/run.jsonl")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    return _tar_xz(path, [(link, b"")])


def _future(path: Path) -> Path:
    return _tar_xz(path, [_file("manifest.json", _manifest({}, bundle_version=99))])


def _future_schema(path: Path) -> Path:
    return _tar_xz(path, [_file("manifest.json", _manifest({}, schema_version=99))])


def _tampered(path: Path) -> Path:
    trace = b'{"type": "run_start"}\n'
    manifest = _manifest({"traces/abc.jsonl": b"something else"})
    return _tar_xz(path, [_file("manifest.json", manifest), _file("traces/abc.jsonl", trace)])


def _deep_manifest(path: Path) -> Path:
    return _tar_xz(path, [_file("manifest.json", b"[" * 100_000 + b"]" * 100_000)])


def _not_an_object(path: Path) -> Path:
    # The run's first line is a list, where its run_start should be; it has a model script.
    trace, script = b"[1]\n", b'{"steps": []}'
    files = {"traces/abc.jsonl": trace, "scripts/abc.json": script}
    manifest = _manifest(files, runs=["abc"], scripts={"abc": "scripts/abc.json"})
    return _tar_xz(
        path, [_file("manifest.json", manifest), *(_file(n, b) for n, b in files.items())]
    )


def _a_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("manifest.json", "{}")
    return path


HOSTILE = {
    "parent": (lambda p: _tar_xz(p, [_file("../evil.jsonl", b"x")]), "points outside the bundle"),
    "deep-parent": (
        lambda p: _tar_xz(p, [_file("traces/../../evil.jsonl", b"x")]),
        "points outside the bundle",
    ),
    "absolute": (lambda p: _tar_xz(p, [_file("/tmp/evil.jsonl", b"x")]), "absolute path"),
    "symlink": (_symlink, "is a link"),
    "stranger": (lambda p: _tar_xz(p, [_file("bin/run.sh", b"x")]), "not part of a workbench"),
    "bomb": (_bomb, "zip bomb"),
    "future": (_future, "bundle version 99 is newer"),
    "future-schema": (_future_schema, "schema_version 99, newer"),
    "tampered": (_tampered, "does not match its digest"),
    "zip": (_a_zip, "not a workbench bundle"),
    "deep-manifest": (_deep_manifest, "manifest.json is not valid JSON"),
    "not-an-object": (_not_an_object, "trace abc: corrupt recording"),
    "empty": (lambda p: (p.write_bytes(b""), p)[1], "not a workbench bundle"),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_bundle_is_one_line_exit_2_and_writes_nothing(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make, message = HOSTILE[kind]
    bundle = make(tmp_path / "bad.wbundle")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    home = tmp_path / "home"
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for argv in (["import", "bundle", str(bundle)], ["show", str(bundle)], [str(bundle)]):
        code, out, err = _run("--home", str(home), *argv)
        assert code == 2, (argv, out, err)
        assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not list(home.rglob("*.jsonl")) if home.exists() else True
    after = sorted(p.name for p in tmp_path.rglob("*") if p.name not in ("home", "traces"))
    assert after == [name for name in before if name not in ("home", "traces")]
    assert not (Path("/tmp") / "evil.jsonl").exists()


def test_a_truncated_bundle_is_one_line(demo_home: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "whole.wbundle"
    run = _by_status(demo_home)["completed"]
    assert _run("--home", str(demo_home), "bundle", run, "-o", str(bundle))[0] == 0
    cut = tmp_path / "cut.wbundle"
    cut.write_bytes(bundle.read_bytes()[: bundle.stat().st_size // 2])
    code, _, err = _run("--home", str(tmp_path / "h"), "import", "bundle", str(cut))
    assert code == 2 and "truncated or damaged" in err and err.count("\n") == 1
    assert not (tmp_path / "h" / "traces").exists() or not list((tmp_path / "h").rglob("*.jsonl"))


def test_a_long_run_streams_into_its_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trace goes through a line at a time, never whole: a run three times as long
    takes no more memory to bundle (read whole, each 600 turns more took some 20 MB
    here), and the bundle holds the trace byte for byte. xz's dictionary, which grows with
    the archive up to 64 MiB, is held at 1 MiB here so as to weigh the rest alone."""
    from tests.support.generated_runs import varied_run
    from workbench.engine.recording.runs import bundle

    fixed = [{"id": lzma.FILTER_LZMA2, "preset": 9, "dict_size": 1 << 20}]
    monkeypatch.setattr(bundle, "_filters", lambda size: fixed)
    home = tmp_path / "home"
    folder = traces_dir(home)
    folder.mkdir(parents=True)
    lengths = {"6" * 32: 300, "7" * 32: 900}
    for run_id, turns in lengths.items():
        varied_run(folder, run_id, turns, rounds_kept=2)
    peaks: list[int] = []
    for run_id in lengths:
        out = tmp_path / f"{run_id[0]}.wbundle"
        assert _run("--home", str(home), "bundle", run_id, "-o", str(out))[0] == 0  # warm-up
        tracemalloc.start()
        try:
            code, _, err = _run("--home", str(home), "bundle", run_id, "-o", str(out))
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert code == 0, err
        trace = (folder / f"{run_id}.jsonl").read_bytes()
        assert _members(out)[f"traces/{run_id}.jsonl"] == trace
    assert peaks[1] - peaks[0] < 4_000_000, peaks


def test_a_run_too_big_to_read_back_is_not_bundled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bundle is only written when `read_bundle` would take it (caps made small here)."""
    from tests.support.generated_runs import varied_run
    from workbench.engine.recording.runs import bundle

    monkeypatch.setattr(bundle, "MAX_MEMBER_BYTES", 20_000)
    home = tmp_path / "home"
    folder = traces_dir(home)
    folder.mkdir(parents=True)
    varied_run(folder, "6" * 32, 40)
    out = tmp_path / "big.wbundle"
    code, _, err = _run("--home", str(home), "bundle", "6" * 32, "-o", str(out))
    assert code != 0 and err.count("\n") == 1
    assert "traces/6666" in err and "a bundle may hold of one file" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]  # nothing left behind


def test_a_short_run_is_bundled_with_a_dictionary_its_size(tmp_path: Path) -> None:
    """xz's strongest preset takes 674 MB to write with its 64 MiB dictionary; a short run
    needs a small one, and compresses the same: its bundle is written in a few MB."""
    from tests.support.generated_runs import varied_run

    home = tmp_path / "home"
    folder = traces_dir(home)
    folder.mkdir(parents=True)
    varied_run(folder, "6" * 32, 20)
    out = tmp_path / "short.wbundle"
    assert _run("--home", str(home), "bundle", "6" * 32, "-o", str(out))[0] == 0  # warm-up
    tracemalloc.start()
    try:
        code, _, err = _run("--home", str(home), "bundle", "6" * 32, "-o", str(out))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 0, err
    assert peak < 50_000_000, peak
    trace = (folder / f"{'6' * 32}.jsonl").read_bytes()
    assert _members(out)[f"traces/{'6' * 32}.jsonl"] == trace
    assert out.stat().st_size < len(trace) / 4


def _dictionary(bundle: Path) -> int:
    """The LZMA2 dictionary the bundle's xz stream was written with (its block header: the
    12-byte stream header, the header's size and flags, the filter id and its one byte)."""
    head = bundle.read_bytes()[:17]
    assert head[13] == 0 and head[14:16] == b"\x21\x01", head  # one LZMA2 filter, no sizes
    props = lzma._decode_filter_properties(lzma.FILTER_LZMA2, head[16:17])  # type: ignore[attr-defined]
    return int(props["dict_size"])


def test_a_long_run_is_bundled_with_a_bounded_dictionary(tmp_path: Path) -> None:
    """The dictionary grows with the archive up to 8 MiB, no further: xz's encoder takes some
    eleven times it (preset 9's own 64 MiB took 0.7 GB for a run of 81 MB), so a bundle of
    a run of any length is written in a bounded few hundred MB."""
    from tests.support.generated_runs import varied_run
    from tests.support.processes import workbench_peak

    home = tmp_path / "home"
    folder = traces_dir(home)
    folder.mkdir(parents=True)
    varied_run(folder, "6" * 32, 350)  # 15 MB: a 16 MiB dictionary, were it not capped
    trace = (folder / f"{'6' * 32}.jsonl").read_bytes()
    assert len(trace) > 12 << 20
    out = tmp_path / "long.wbundle"
    done, peak_kb = workbench_peak(home, tmp_path, "bundle", "6" * 32, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert _dictionary(out) == 8 << 20
    assert peak_kb < 300_000, peak_kb
    assert _members(out)[f"traces/{'6' * 32}.jsonl"] == trace


def test_a_damaged_trace_is_not_bundled_and_a_cut_off_one_is(tmp_path: Path) -> None:
    """Checked as it streams, as a recording is read: a bad line before the last one is
    one line of error and no bundle; a last line cut off (a killed run) goes in as it is."""
    from tests.support.generated_runs import varied_run

    home = tmp_path / "home"
    folder = traces_dir(home)
    folder.mkdir(parents=True)
    damaged, cut = "6" * 32, "7" * 32
    for run_id in (damaged, cut):
        varied_run(folder, run_id, 5)
    lines = (folder / f"{damaged}.jsonl").read_bytes().splitlines(keepends=True)
    (folder / f"{damaged}.jsonl").write_bytes(b"".join([*lines[:3], b"{not json\n", *lines[3:]]))
    with (folder / f"{cut}.jsonl").open("ab") as trace:
        trace.write(b'{"schema_version": 3, "run_id": "7')
    out = tmp_path / "damaged.wbundle"
    code, _, err = _run("--home", str(home), "bundle", damaged, "-o", str(out))
    assert code != 0 and err.count("\n") == 1 and "corrupt recording" in err and ":4:" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]  # nothing left behind
    garbage = tmp_path / "garbage.jsonl"  # no line of it an event: the first bad one named
    garbage.write_bytes(b"garbage\n")
    code, _, err = _run("--home", str(home), "bundle", str(garbage), "-o", str(out))
    assert code != 0 and err.count("\n") == 1 and "garbage.jsonl:1: not valid JSON" in err
    garbage.unlink()
    out = tmp_path / "cut.wbundle"
    assert _run("--home", str(home), "bundle", cut, "-o", str(out))[0] == 0
    assert _members(out)[f"traces/{cut}.jsonl"] == (folder / f"{cut}.jsonl").read_bytes()


# --- a bundle and a recorded run's metadata are hostile ---------------------------------


def _start_line(trace: Path) -> dict[str, Any]:
    return dict(json.loads(trace.read_text(encoding="utf-8").splitlines()[0]))


def _with_meta(trace: Path, **meta: Any) -> None:
    """The trace with its run_start's meta changed, as a sender may have made it."""
    first, rest = trace.read_text(encoding="utf-8").split("\n", 1)
    start = json.loads(first)
    start["meta"].update(meta)
    trace.write_text(json.dumps(start) + "\n" + rest, encoding="utf-8")


READ_THE_SECRET = {
    "name": "reads what it should not",
    "steps": [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "secret.txt"}}]},
        {"content": "done"},
    ],
}


def test_a_fork_of_an_imported_run_reads_no_folder_the_bundle_names(
    demo_home: Path, tmp_path: Path
) -> None:
    """A bundle names a folder of the recipient as its run's root and ships a model script
    that reads a file there: the recipient's fork asks for --root, and reads only there."""
    mine = tmp_path / "recipient-files"
    mine.mkdir()
    (mine / "secret.txt").write_text("the recipient's secret", encoding="utf-8")
    run = _by_status(demo_home)["completed"]
    trace = traces_dir(demo_home) / f"{run}.jsonl"
    _with_meta(trace, root=str(mine))
    script = Path(_start_line(trace)["meta"]["fork_script"])
    script.write_text(json.dumps(READ_THE_SECRET), encoding="utf-8")
    bundle = tmp_path / "hostile.wbundle"
    assert _run("--home", str(demo_home), "bundle", run, "-o", str(bundle))[0] == 0

    fresh = tmp_path / "recipient"
    assert _run("--home", str(fresh), "import", "bundle", str(bundle))[0] == 0
    before = sorted(traces_dir(fresh).iterdir())
    code, _, err = _run("--home", str(fresh), "fork", run, "--turn", "1", "--quiet")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "came from a bundle" in err and "--root" in err
    assert sorted(traces_dir(fresh).iterdir()) == before  # nothing ran
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    code, _, err = _run(
        "--home", str(fresh), "fork", run, "--turn", "1", "--quiet", "--root", str(chosen)
    )  # fmt: skip
    assert code == 0, err
    assert "offline model script" in err  # the copy the import made, in the home
    assert not [p for p in fresh.rglob("*.jsonl") if "recipient's secret" in p.read_text()]


def test_only_a_model_script_inside_the_home_is_bundled(demo_home: Path, tmp_path: Path) -> None:
    """A trace may name any file as its model script (an imported one, a hand-edited one):
    only one inside the home goes in, redacted; any other is left out with a note."""
    runs = _by_status(demo_home)
    inside, outside, linked = runs["completed"], runs["max_turns"], runs["token_budget"]
    private = tmp_path / "elsewhere" / "private.json"
    private.parent.mkdir()
    private.write_text('{"steps": [{"content": "my own private notes"}]}', encoding="utf-8")
    link = demo_home / "link.json"
    link.symlink_to(private)
    folder = traces_dir(demo_home)
    _with_meta(folder / f"{outside}.jsonl", fork_script=str(private))
    _with_meta(folder / f"{linked}.jsonl", fork_script=str(link))
    script = Path(_start_line(folder / f"{inside}.jsonl")["meta"]["fork_script"])
    script.write_text('{"steps": [{"content": "key token-12345678"}]}', encoding="utf-8")
    (demo_home / "redact-patterns.txt").write_text("token-[0-9]{8}\n", encoding="utf-8")
    bundle = tmp_path / "three.wbundle"
    code, out, err = _run(
        "--home", str(demo_home), "bundle", inside, outside, linked, "-o", str(bundle)
    )  # fmt: skip
    assert code == 0, err
    members = _members(bundle)
    assert sorted(json.loads(members["manifest.json"])["scripts"]) == [inside]
    assert b"token-12345678" not in members[f"scripts/{inside}.json"]
    assert all(b"my own private notes" not in body for body in members.values())
    for run_id in (outside, linked):
        assert f"model script of run {run_id[:12]} is outside the home; not included" in out


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder"])
def test_bundle_never_writes_over_what_is_not_a_regular_file(
    demo_home: Path, tmp_path: Path, kind: str
) -> None:
    target = tmp_path / "target"
    kept = tmp_path / "kept.wbundle"
    kept.write_bytes(b"someone else's file")
    if kind == "fifo":
        import os

        os.mkfifo(target)
    elif kind == "symlink":
        target.symlink_to(kept)
    else:
        target.mkdir()
    run = _by_status(demo_home)["completed"]
    code, _, err = _run("--home", str(demo_home), "bundle", run, "-o", str(target))
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "not a regular file" in err
    assert {
        "fifo": target.is_fifo, "symlink": target.is_symlink, "folder": target.is_dir
    }[kind]()  # fmt: skip
    assert kept.read_bytes() == b"someone else's file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.wbundle", "made-here", "target"]


@pytest.mark.parametrize("where", ["under-a-file", "long-name"])
def test_a_bundle_path_that_cannot_be_written_is_one_line(
    demo_home: Path, tmp_path: Path, where: str
) -> None:
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    out = {
        "under-a-file": tmp_path / "a-file" / "x.wbundle",
        "long-name": tmp_path / ("b" * 300 + ".wbundle"),
    }[where]
    run = _by_status(demo_home)["completed"]
    code, _, err = _run("--home", str(demo_home), "bundle", run, "-o", str(out))
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "cannot write" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "made-here"]


def test_a_second_bundle_never_replaces_the_script_of_a_run_imported_before(
    demo_home: Path, tmp_path: Path
) -> None:
    run = _by_status(demo_home)["completed"]
    first, second = tmp_path / "first.wbundle", tmp_path / "second.wbundle"
    assert _run("--home", str(demo_home), "bundle", run, "-o", str(first))[0] == 0
    script = Path(_start_line(traces_dir(demo_home) / f"{run}.jsonl")["meta"]["fork_script"])
    script.write_text(json.dumps(READ_THE_SECRET), encoding="utf-8")
    assert _run("--home", str(demo_home), "bundle", run, "-o", str(second))[0] == 0
    fresh = tmp_path / "recipient"
    assert _run("--home", str(fresh), "import", "bundle", str(first))[0] == 0
    imported = fresh / "bundle-scripts" / f"{run}.json"
    kept = imported.read_bytes()
    code, out, err = _run("--home", str(fresh), "import", "bundle", str(second))
    assert code == 0 and "1 already there" in out, err
    assert imported.read_bytes() == kept
    assert sorted(p.name for p in imported.parent.iterdir()) == [f"{run}.json"]


def _extended_header(path: Path, kind: bytes, form: Literal[0, 1, 2]) -> Path:
    """An extended header (pax, or a GNU long name) that says 1 GiB follows, and 64 MiB of
    it that does, in 10 KB of xz."""
    info = tarfile.TarInfo("././@LongLink")
    info.type, info.size = kind, 1 << 30
    packer = lzma.LZMACompressor(preset=0)
    packed = [packer.compress(info.tobuf(form))]
    zeros = bytes(1 << 20)
    packed += [packer.compress(zeros) for _ in range(64)]
    path.write_bytes(b"".join([*packed, packer.flush()]))
    return path


@pytest.mark.parametrize(
    ("kind", "form"),
    [(tarfile.XHDTYPE, tarfile.USTAR_FORMAT), (tarfile.GNUTYPE_LONGNAME, tarfile.GNU_FORMAT)],
    ids=["pax", "gnu-long-name"],
)
def test_an_extended_header_bomb_stops_at_its_header(
    tmp_path: Path, kind: bytes, form: Literal[0, 1, 2]
) -> None:
    """What an extended header says it holds is checked before any of it is read: the
    64 MiB that follow it here are never read (that would show in the peak)."""
    bomb = _extended_header(tmp_path / "bomb.wbundle", kind, form)
    tracemalloc.start()
    try:
        code, _, err = _run("--home", str(tmp_path / "home"), "import", "bundle", str(bomb))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "extended header" in err and "1024 MiB" in err
    assert peak < 16_000_000, peak


@pytest.mark.parametrize("kept", [0.5, 0.9, 0.99, -1])
def test_a_bundle_cut_anywhere_is_refused(demo_home: Path, tmp_path: Path, kept: float) -> None:
    bundle = tmp_path / "whole.wbundle"
    run = _by_status(demo_home)["completed"]
    assert _run("--home", str(demo_home), "bundle", run, "-o", str(bundle))[0] == 0
    whole = bundle.read_bytes()
    cut = tmp_path / "cut.wbundle"
    cut.write_bytes(whole[: int(len(whole) * kept)] if kept > 0 else whole[:-1])
    code, _, err = _run("--home", str(tmp_path / "h"), "import", "bundle", str(cut))
    assert code == 2 and "truncated or damaged" in err and err.count("\n") == 1, err
    assert not (tmp_path / "h").exists() or not list((tmp_path / "h").rglob("*.jsonl"))
