"""A file a user names on the command line is read only if it is a regular file of a sane
size: a FIFO (it would block), a device (/dev/zero, /dev/urandom never end) or a huge file
is one line and exit 2, at once, never a hang or a MemoryError."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from traces.user_files import MAX_FILE_BYTES, UnreadableFileError, read_text

CLI = "import sys; from workbench.cli import main; sys.exit(main())"
# Before these were refused, /dev/zero was read until memory ran out: the bound keeps a
# regression from taking the machine's memory with it.
MEMORY_BOUND = 3 * 1024**3


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND, MEMORY_BOUND))


def workbench(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI, "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=30,  # a FIFO read would block for ever
        stdin=subprocess.DEVNULL,
        preexec_fn=_bounded,
    )


@pytest.fixture
def bad(tmp_path: Path) -> dict[str, Path]:
    """Each kind of file that must not be read, under a name each reader accepts."""
    folder = tmp_path / "bad"
    folder.mkdir()
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    huge = folder / "huge"
    with huge.open("wb") as handle:  # sparse: takes no disk
        handle.truncate(MAX_FILE_BYTES + 1)
    kinds = {"fifo": fifo, "zero": Path("/dev/zero"), "urandom": Path("/dev/urandom"), "huge": huge}
    named: dict[str, Path] = {}
    for kind, target in kinds.items():
        for suffix in (".jsonl", ".json", ".toml", ".txt"):
            link = folder / f"{kind}{suffix}"
            link.symlink_to(target)
            named[kind + suffix] = link
    return named


SCRIPT_STEPS = {"steps": [{"content": "done"}]}


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT_STEPS), encoding="utf-8")
    return path


@pytest.mark.parametrize("kind", ["fifo", "zero", "urandom", "huge"])
@pytest.mark.parametrize(
    ("command", "named"),
    [
        (["lint-tools", "--run", "{jsonl}"], "jsonl"),
        (["lint-tools", "{json}"], "json"),
        (["run", "task", "--script", "{json}"], "json"),
        (["run", "task", "--script", "{toml}"], "toml"),
        (["run", "task", "--script", "{script}", "--system", "@{txt}"], "txt"),
        (["run", "t", "--script", "{script}", "--tool-description", "read_file=@{txt}"], "txt"),
        (["run", "task", "--script", "{script}", "--mcp-config", "{json}"], "json"),
        (["test", "{toml}", "--script", "{script}"], "toml"),
        (["ingest-otel", "{json}"], "json"),
        (["export", "{jsonl}"], "jsonl"),
    ],
)
def test_a_named_file_that_is_not_a_regular_file_of_sane_size_is_one_line(
    tmp_path: Path, bad: dict[str, Path], kind: str, command: list[str], named: str
) -> None:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    values = {suffix: str(bad[f"{kind}.{suffix}"]) for suffix in ("jsonl", "json", "toml", "txt")}
    values["script"] = str(_script(tmp_path))
    proc = workbench(home, *(part.format(**values) for part in command))
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert values[named] in lines[0], lines[0]
    if kind == "huge" and (named == "jsonl" or command[0] == "ingest-otel"):
        return  # traces are read line by line and OTLP exports have a larger bound: read
    # A reader that looks before it opens may say the file is not there; the rest say why.
    reason = "larger than 64 MB" if kind == "huge" else "not a regular file"
    assert any(words in lines[0] for words in (reason, "no trace file", "no such file"))


def test_a_regular_file_reads_as_text_and_refusals_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "prompt.txt"
    path.write_bytes(b"line one\r\nline two\n")
    assert read_text(path) == "line one\nline two\n"
    path.write_bytes(b"\xff\xfe binary")
    with pytest.raises(UnreadableFileError) as caught:
        read_text(path)
    assert str(caught.value) == "not UTF-8 text (byte 0 cannot be read)"
    with pytest.raises(UnreadableFileError, match="larger than 4 bytes"):
        read_text(path, limit=4)
    with pytest.raises(UnreadableFileError, match=r"not a regular file \(a folder\)"):
        read_text(tmp_path)
