"""The TUI's watch of the traces folder: each folder watched on its own (a recursive watch
walks every entry, holding the interpreter, which froze the screen with 1,000,000 runs), new
traces seen in the folder, in folders under it (a folder without subfolders is not read:
its link count says so) and in a folder made after the watch began."""

from __future__ import annotations

import threading
from pathlib import Path

from workbench.tui.backend import Backend


def _until_seen(seen: threading.Event, folder: Path, name: str) -> bool:
    """Write new traces into `folder` until the watch reports one: it may start watching a
    moment after it is asked to, and a trace written before then is not an event."""
    for attempt in range(100):
        (folder / f"{name}-{attempt}.jsonl").write_text("{}\n")
        if seen.wait(0.1):
            return True
    return False


def test_new_traces_are_seen_also_in_a_folder_made_meanwhile(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    (traces / "old" / "deeper").mkdir(parents=True)
    backend = Backend(tmp_path)
    stop, seen = threading.Event(), threading.Event()
    watcher = threading.Thread(target=backend.watch_traces, args=(stop, seen.set))
    watcher.start()
    try:
        assert _until_seen(seen, traces, "top")
        seen.clear()
        assert _until_seen(seen, traces / "old", "old")
        seen.clear()
        assert _until_seen(seen, traces / "old" / "deeper", "deeper")
        (traces / "new").mkdir()
        assert seen.wait(10)  # the new folder itself may already hold traces
        seen.clear()
        assert _until_seen(seen, traces / "new", "new")
        seen.clear()
        (traces / "new" / "note.txt").write_text("not a trace")
        assert _until_seen(seen, traces / "new", "after")
    finally:
        stop.set()
        watcher.join(10)
    assert not watcher.is_alive()
