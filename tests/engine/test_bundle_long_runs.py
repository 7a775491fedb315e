"""A bundle of a long run opens in the memory of a short one's: each trace is unpacked to a
file and checked a line at a time, never held whole, and the replay then streams it."""

from __future__ import annotations

import contextlib
import io
import lzma
import tracemalloc
from pathlib import Path

import pytest

from tests.support.big_traces import long_agent_run
from traces.home import traces_dir
from workbench.cli import main


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_replay_of_a_bundle_of_a_long_run_takes_the_memory_of_a_short_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`workbench replay X.wbundle` of a run four times as long takes a tenth of its extra
    trace bytes more, where the import read each trace whole (decoded, rewritten and read
    back as a list of events: some ten times its bytes), and still replays identically.
    xz's dictionary, which grows with the archive up to 8 MiB (`bundle.MAX_DICTIONARY`), is
    held at 1 MiB here so as to weigh the rest alone."""
    from workbench.engine.recording.runs import bundle

    fixed = [{"id": lzma.FILTER_LZMA2, "preset": 9, "dict_size": 1 << 20}]
    monkeypatch.setattr(bundle, "_filters", lambda size: fixed)
    home = tmp_path / "home"
    folder = traces_dir(home)
    sizes: dict[int, int] = {}
    bundles: dict[int, Path] = {}
    for turns in (60, 240):
        run_id = f"{turns:032d}"
        sizes[turns] = long_agent_run(folder, run_id, turns, 20, context_window=2000).stat().st_size
        bundles[turns] = tmp_path / f"{turns}.wbundle"
        code, _, err = _run("--home", str(home), "bundle", run_id, "-o", str(bundles[turns]))
        assert code == 0, err
    elsewhere = tmp_path / "elsewhere"
    assert _run("--home", str(elsewhere), "replay", str(bundles[60]))[0] == 0  # imports, unmeasured
    peaks: dict[int, int] = {}
    for turns, opened in bundles.items():
        tracemalloc.start()
        try:
            code, out, err = _run("--home", str(elsewhere), "replay", str(opened))
            peaks[turns] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert code == 0, out + err
        assert "identical decision chain" in out and f"{turns} model turns" in out, out
    assert peaks[240] - peaks[60] < (sizes[240] - sizes[60]) / 10, (peaks, sizes)
    assert not elsewhere.exists()  # opening a bundle writes no home
