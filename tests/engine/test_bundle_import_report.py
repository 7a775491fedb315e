"""What `workbench import bundle` says: every run it counts is listed, the fork parent that
came with a fork included (issue 42: "imported 2 run(s)" above one id)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from traces.home import traces_dir
from traces.store import RunQuery, TraceStore
from workbench.cli import main


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_import_bundle_lists_each_run_it_counts(tmp_path: Path) -> None:
    home, fresh = tmp_path / "made-here", tmp_path / "somewhere-else"
    assert _run("--home", str(home), "demo", "--no-tui")[0] == 0
    with TraceStore.for_home(home) as store:
        [parent] = [r.run_id for r in store.runs(where=RunQuery.of("completed", "Fahrenheit"))]
    before = set(traces_dir(home).glob("*.jsonl"))
    assert _run("--home", str(home), "fork", parent, "--turn", "1", "--quiet")[0] == 0
    [fork] = [path.stem for path in set(traces_dir(home).glob("*.jsonl")) - before]
    bundle = tmp_path / "issue.wbundle"
    assert _run("--home", str(home), "bundle", fork, "-o", str(bundle))[0] == 0

    code, out, err = _run("--home", str(fresh), "import", "bundle", str(bundle))
    assert code == 0, err
    assert out.splitlines() == [
        f"imported 2 run(s) into {fresh}",
        f"  {fork}",
        f"  {parent} (fork parent)",
    ]
    code, out, _ = _run("--home", str(fresh), "import", "bundle", str(bundle))
    assert out.splitlines()[1:] == [
        f"  {fork} (already there)",
        f"  {parent} (fork parent) (already there)",
    ]
