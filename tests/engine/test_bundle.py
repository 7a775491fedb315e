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
from typing import Any

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
    # The imported offline model script still forks the run with no model configured.
    code, _, err = _run("--home", str(fresh), "fork", parent, "--turn", "1", "--quiet")
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
    from tests.engine.stored_runs import varied_run
    from workbench.engine.recording import bundle

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
    from tests.engine.stored_runs import varied_run
    from workbench.engine.recording import bundle

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
    from tests.engine.stored_runs import varied_run

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


def test_a_damaged_trace_is_not_bundled_and_a_cut_off_one_is(tmp_path: Path) -> None:
    """Checked as it streams, as a recording is read: a bad line before the last one is
    one line of error and no bundle; a last line cut off (a killed run) goes in as it is."""
    from tests.engine.stored_runs import varied_run

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
