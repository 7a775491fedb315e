"""The file tools check what they opened, not a path that may change under them: a thread
that keeps swapping a file (or a folder) for a symlink to one outside the root never gets
the outside content read, listed or searched."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent_core.tools.builtin import builtin_tools

SECRET = "OUTSIDE-SECRET-CONTENT"
SWAPS = 200_000  # the swapper's bound: it stops sooner once the reads are done
READS = 300


@contextmanager
def swapping(place: Path, outside: Path, spare: Path | None = None) -> Iterator[list[int]]:
    """A thread that keeps turning `place` into a symlink to `outside` and back, a bounded
    number of times, until the block ends; yields the count of swaps made so far. Back is a
    regular file, or with `spare` (a folder beside it) that folder, moved in and out of
    `place`. Which state each read meets depends on the machine's speed: the tests judge
    only that no read ever met the outside, and that the swapper swapped both ways."""
    stop = threading.Event()
    swapped = threading.Event()
    link = place.with_name(place.name + ".link")
    real = place.with_name(place.name + ".real")

    def swap() -> None:
        for number in range(SWAPS):
            if stop.is_set():
                return
            if spare is None:  # os.replace swaps a file and a symlink in one step
                if number % 2:
                    os.symlink(outside, link)
                    os.replace(link, place)
                else:
                    real.write_text("inside text\n")
                    os.replace(real, place)
            elif number % 2 == 0:  # a folder cannot replace a symlink in one step, nor back
                os.rename(place, spare)
                os.symlink(outside, place)
            else:
                os.unlink(place)
                os.rename(spare, place)
            swaps[0] = number + 1
            swapped.set()

    swaps = [0]
    if spare is not None:
        os.rename(spare, place)
    else:
        place.write_text("inside text\n")
    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    try:
        assert swapped.wait(10)
        yield swaps
    finally:
        stop.set()
        thread.join(10)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "notes.txt").write_text(f"{SECRET}\n")
    (folder / f"{SECRET}.txt").write_text("a name list_dir must not show\n")
    return folder


async def test_read_file_never_reads_a_file_swapped_for_a_symlink(
    project: Path, outside: Path
) -> None:
    tools = builtin_tools(project)
    texts = []
    with swapping(project / "notes.txt", outside / "notes.txt") as swaps:
        for number in range(READS):
            result = await tools.call("read_file", {"path": "notes.txt"}, f"c{number}")
            texts.append(result.text)
    assert not [text for text in texts if SECRET in text]
    assert swaps[0] >= 2  # the race ran both ways


async def test_folder_tools_never_follow_a_folder_swapped_for_a_symlink(
    project: Path, outside: Path, tmp_path: Path
) -> None:
    tools = builtin_tools(project)
    spare = tmp_path / "spare"
    spare.mkdir()
    (spare / "notes.txt").write_text("inside notes\n")
    texts = []
    with swapping(project / "docs", outside, spare) as swaps:
        for number in range(READS):
            for name, arguments in [
                ("read_file", {"path": "docs/notes.txt"}),
                ("list_dir", {"path": "docs"}),
                ("search_files", {"query": "notes", "path": "."}),
                ("search_files", {"query": SECRET[:8], "path": "docs"}),
            ]:
                result = await tools.call(name, arguments, f"c{number}")
                texts.append(result.text)
    assert not [text for text in texts if SECRET in text]
    assert swaps[0] >= 2  # the race ran both ways


async def test_symlinks_that_stay_inside_the_root_still_work(project: Path) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "guide.md").write_text("the guide\n")
    os.symlink("docs/guide.md", project / "relative.md")
    os.symlink(project / "docs" / "guide.md", project / "absolute.md")
    os.symlink("../docs", project / "src" / "up")  # a link may climb, as long as it stays in
    os.symlink("src/up", project / "chain")
    tools = builtin_tools(project)
    for path in ("relative.md", "absolute.md", "src/up/guide.md", "chain/guide.md"):
        result = await tools.call("read_file", {"path": path}, "c1")
        assert result.ok and result.text == "1: the guide", (path, result.text)
    listed = await tools.call("list_dir", {"path": "chain"}, "c2")
    assert listed.ok and listed.text == "guide.md  10"
    listed = await tools.call("list_dir", {"path": "."}, "c3")
    assert "chain/" in listed.text.splitlines() and "relative.md  10" in listed.text
    os.symlink("../../..", project / "src" / "far")
    result = await tools.call("read_file", {"path": "src/far/etc/passwd"}, "c4")
    assert not result.ok and "leaves the root through a symlink" in result.text
