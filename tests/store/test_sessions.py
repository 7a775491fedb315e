"""Sessions (issue 39, part 6): runs of one conversation or agent session grouped by
`run_start.meta.session_id`, stored at ingest as `runs.session`; `workbench sessions`,
`show --session` and `runs --session`, and `workbench run --session NAME`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.generated_runs import small_run
from traces.events import SESSION_META
from traces.store import TraceStore
from workbench.cli import main

ALPHA = "alpha-0f3c"
ROOT = "r" * 32  # the first run of a proxied conversation: named by its follow-up


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home" / "traces"
    small_run(folder, "a1" * 16, turns=2, meta={SESSION_META: ALPHA})
    small_run(folder, "a2" * 16, turns=3, end=False, meta={SESSION_META: ALPHA})
    small_run(folder, "n" * 32, turns=1)  # part of no session
    small_run(folder, ROOT, turns=1)
    small_run(folder, "f" * 32, turns=1, meta={SESSION_META: ROOT}, parent_run_id=ROOT)
    return tmp_path / "home"


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def test_runs_are_grouped_into_sessions_at_ingest(home: Path) -> None:
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        by_run = {row.run_id: row.session for row in store.runs(limit=10)}
        sessions = {row.session: row for row in store.sessions()}
    assert by_run == {
        "a1" * 16: ALPHA,
        "a2" * 16: ALPHA,
        "n" * 32: None,
        ROOT: ROOT,  # the run its follow-up names is the session's first run
        "f" * 32: ROOT,
    }
    alpha = sessions[ALPHA]
    # (the ended run says 0 turns in its run_end totals; the other counts its 3)
    assert (alpha.runs, alpha.turns, alpha.tool_calls) == (2, 3, 3)
    assert alpha.statuses == {"completed": 1, "incomplete": 1}
    assert alpha.task == f"task of {'a1' * 16}"
    assert set(sessions) == {ALPHA, ROOT}


def test_a_follow_up_ingested_later_still_takes_its_first_run_in(home: Path) -> None:
    folder = home / "traces"
    (folder / f"{'f' * 32}.jsonl").unlink()
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        assert store.run(ROOT).session is None
        small_run(folder, "g" * 32, turns=1, meta={SESSION_META: ROOT})
        store.ingest_home(home)
        assert store.run(ROOT).session == ROOT
        assert [row.runs for row in store.sessions(session=ROOT)] == [2]


def test_sessions_lists_each_with_its_totals(home: Path, capsys) -> None:
    listed = json.loads(_cli(capsys, "--home", str(home), "sessions", "--json"))
    alpha = next(row for row in listed if row["session"] == ALPHA)
    assert (alpha["runs"], alpha["statuses"]) == (2, {"completed": 1, "incomplete": 1})
    text = _cli(capsys, "--home", str(home), "sessions")
    line = next(line for line in text.splitlines() if line.startswith(ALPHA))
    assert "1 completed, 1 incomplete" in line


def test_show_session_lists_its_runs_in_order_with_totals(home: Path, capsys) -> None:
    shown = _cli(capsys, "--home", str(home), "show", "--session", "alpha")  # a prefix will do
    lines = shown.splitlines()
    assert lines[0].startswith(f"session {ALPHA}") and "2 runs · 3 turns" in lines[0]
    runs = [line for line in lines if line.lstrip()[:2] in ("1.", "2.")]
    assert [line.split()[1] for line in runs] == [("a1" * 16)[:12], ("a2" * 16)[:12]]
    document = json.loads(_cli(capsys, "--home", str(home), "show", "--session", ALPHA, "--json"))
    assert [run["run_id"] for run in document["runs"]] == ["a1" * 16, "a2" * 16]
    assert document["session"]["total_tokens"] == 0


def test_runs_session_filters_and_unknown_sessions_are_one_line(home: Path, capsys) -> None:
    listed = json.loads(_cli(capsys, "--home", str(home), "runs", "--session", ROOT, "--json"))
    assert sorted(row["run_id"] for row in listed) == ["f" * 32, ROOT]
    assert main(["--home", str(home), "runs", "--session", "nope"]) == 2  # as an unknown run
    err = capsys.readouterr().err
    assert err.strip() == "workbench: no session 'nope'; `workbench sessions` lists them"


def test_workbench_run_session_names_the_session(tmp_path: Path, capsys) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": [{"content": "Done."}]}))
    home = tmp_path / "h"
    for _ in range(2):
        argv = ["run", "hi", "--script", str(script), "--root", str(project), "--home", str(home)]
        assert main([*argv, "--session", "my-task"]) == 0
    capsys.readouterr()
    [row] = json.loads(_cli(capsys, "--home", str(home), "sessions", "--json"))
    assert (row["session"], row["runs"], row["statuses"]) == ("my-task", 2, {"completed": 2})
