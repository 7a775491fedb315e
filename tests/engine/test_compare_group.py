"""`workbench compare` as a real process (issue 38, part 1): N runs of one task aligned
step by step, the path the passing runs share, and the first step where each other run
left it, on generated groups whose right answers are known (tests/support/failing_runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.failing_runs import (
    KNOWN_GROUP,
    KNOWN_VARIANTS,
    PASSING,
    Call,
    Script,
    recorded_run,
    runs_of_one_task,
    variants_of,
)
from tests.support.processes import workbench_at, workbench_peak
from traces.store import TraceStore
from traces.store.steps import task_runs
from workbench.engine.analysis import compare
from workbench.engine.analysis.compare import compare_group, left_path


def _home(tmp_path: Path, scripts: list[tuple[str, int, Script]] = KNOWN_GROUP) -> Path:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    runs_of_one_task(home / "traces", scripts)
    return home


def _compared(home: Path, *argv: str, code: int = 1) -> dict[str, Any]:
    done = workbench_at(home, "compare", "--json", *argv)
    assert done.returncode == code, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _name(run_id: str) -> str:
    return run_id.rsplit("-", 1)[0]


def test_the_known_group_has_its_path_and_variants(tmp_path: Path) -> None:
    report = _compared(_home(tmp_path), "--task", "pass-0", "--examples", "10")

    assert (report["runs"], report["passed"], report["failed"], report["tasks"]) == (21, 11, 10, 1)
    path = report["path"]
    assert [(s["kind"], s["tool"], s["turn"]) for s in path] == [
        ("call", "list_dir", 1),
        ("call", "read_file", 2),
        ("answer", None, 3),
        ("end", None, None),
    ]
    # Steps show content: the arguments, the results, the answer.
    assert path[1]["arguments"] == '{"path":"units.txt"}'
    assert path[1]["text"] == "metre second kilogram"
    assert path[2]["text"] == "The units are metre, second and kilogram."
    assert report["on_path"]["runs"] == 6 and report["on_path"]["failed"] == 0
    assert {_name(run) for run in report["on_path"]["run_ids"]} == {"pass"}
    found = variants_of(report)
    assert sorted(found, key=str) == sorted(KNOWN_VARIANTS, key=str)
    assert found[0] == KNOWN_VARIANTS[0]  # most runs first
    assert report["total_variants"] == len(KNOWN_VARIANTS)
    assert report["variants"][0]["says"] == (
        "7 runs called `search_files` where the passing runs called `list_dir`; 3 of them failed"
    )


def test_a_variant_shows_its_step_beside_the_paths_with_word_diffs(tmp_path: Path) -> None:
    report = _compared(_home(tmp_path), "--task", "pass-0")
    by_how = {v["departure"]["how"]: v["departure"] for v in report["variants"]}

    args = by_how["other_arguments"]
    assert args["step"]["arguments"] == '{"path":"unit.txt"}'
    assert args["expected"]["arguments"] == '{"path":"units.txt"}'
    diff = next(d for d in args["diffs"] if d["what"] == "arguments")
    assert ["delete", '"units.txt"}'] in diff["word_diff"]
    assert ["insert", '"unit.txt"}'] in diff["word_diff"]
    broken = by_how["tool_error"]
    assert broken["step"]["outcome"] == "error"
    assert broken["step"]["text"] == "tool_failure: Error: permission denied"
    answer = next(d for d in by_how["other_answer"]["diffs"] if d["what"] == "answer")
    assert ["insert", "metres "] in answer["word_diff"]
    assert by_how["limit"]["step"]["outcome"] == "max_turns"
    assert by_how["error"]["step"]["text"] == "upstream 503"
    # Each variant says where to open its first run: the step's event (none for its end).
    steps = [v["departure"]["step"] for v in report["variants"]]
    assert all(isinstance(s["seq"], int) == (s["kind"] != "end") for s in steps)


def test_the_text_says_each_variant_in_a_sentence_with_its_diff(tmp_path: Path) -> None:
    done = workbench_at(_home(tmp_path), "compare", "--task", "pass-0")

    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "21 runs (the runs of the task of pass-0) · 11 passed, 10 failed"
    assert (
        "the path of the 11 passing runs (6 runs followed it to its end; 0 of them failed):"
        in lines
    )
    assert '  step 2, turn 2  read_file {"path":"units.txt"} → ok' in lines
    text = done.stdout
    assert (
        "• 7 runs called `search_files` where the passing runs called `list_dir`; "
        "3 of them failed" in text
    )
    assert "• 2 runs called `read_file` with other arguments than the passing runs" in text
    assert '    arguments: {"path": [-"units.txt"}-] {+"unit.txt"}+}' in lines
    assert "    answer: The units are [-metre, second-] {+metres+} and" in text
    assert "7 ways runs left it:" in lines


def test_runs_given_by_id_and_of_other_tasks_are_compared_with_a_note(tmp_path: Path) -> None:
    home = _home(tmp_path, [("pass", 2, PASSING)])
    broken = Script((Call("list_dir", {"path": "."}),), status="max_turns")
    from datetime import UTC, datetime

    recorded_run(home / "traces", "elsewhere", broken, at=datetime.now(UTC), task="other task")

    done = workbench_at(home, "compare", "--json", "pass-0", "pass-1", "elsew")

    assert done.returncode == 1, done.stderr
    note = done.stderr.strip().splitlines()
    assert note == [
        "workbench: note: these 3 runs are of 2 different tasks (system prompt, task or "
        "tools differ); comparing them anyway"
    ]
    report = json.loads(done.stdout)
    assert report["runs"] == 3 and report["tasks"] == 2
    assert report["variants"][0]["departure"]["how"] == "limit"


def test_a_run_id_that_matches_nothing_is_one_line_and_exit_2(tmp_path: Path) -> None:
    home = _home(tmp_path, [("pass", 2, PASSING)])

    for argv in (["nope"], ["--task", "nope"], ["--label", "flaky"], ["--run-name", "nightly"]):
        done = workbench_at(home, "compare", *argv)
        assert done.returncode == 2, argv
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    both = workbench_at(home, "compare", "pass-0", "--task", "pass-1")
    assert both.returncode == 2 and "one group" in both.stderr


def test_a_group_of_one_run_has_nothing_to_compare_against(tmp_path: Path) -> None:
    home = _home(tmp_path, [("pass", 1, PASSING)])

    done = workbench_at(home, "compare", "--task", "pass-0")

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "one run alone: nothing to compare it against"
    assert _compared(home, "pass-0", code=0)["variants"] == []


def test_runs_that_all_take_one_path_exit_0(tmp_path: Path) -> None:
    home = _home(tmp_path, [("pass", 3, PASSING)])

    done = workbench_at(home, "compare", "--task", "pass-1")

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "every run followed this path"


def test_with_no_passing_run_the_path_is_the_one_most_runs_took(tmp_path: Path) -> None:
    stuck = Script((Call("list_dir", {"path": "."}),), status="max_turns")
    early = Script((), status="timeout", reason="the run took too long")
    home = _home(tmp_path, [("stuck", 3, stuck), ("early", 1, early)])

    report = _compared(home, "--task", "stuck-0")

    assert report["path_of"] == "all" and report["passed"] == 0
    assert [s["tool"] for s in report["path"]] == ["list_dir", None]
    assert report["variants"][0]["says"] == (
        "1 run hit a limit (timeout) where most runs called `list_dir`; 1 of them failed"
    )


def test_a_label_and_a_run_name_name_a_group(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / "traces"
    folder.mkdir(parents=True)
    runs_of_one_task(folder, [("named", 2, PASSING)], meta={"name": "nightly"})
    runs_of_one_task(folder, [("plain", 2, PASSING)])
    for run in ("plain-0", "plain-1"):
        noted = workbench_at(home, "note", run, "--label", "flaky")
        assert noted.returncode == 0, noted.stderr

    named = _compared(home, "--run-name", "nightly", code=0)
    labelled = _compared(home, "--label", "flaky", code=0)

    assert sorted(named["on_path"]["run_ids"]) == ["named-0", "named-1"]
    assert named["group"] == "the runs named nightly"
    assert sorted(labelled["on_path"]["run_ids"]) == ["plain-0", "plain-1"]


def test_left_path_places_one_run_against_the_passing_runs_of_its_task(tmp_path: Path) -> None:
    home = _home(tmp_path)
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        left = left_path(store, "args-1")
        alone = left_path(store, "pass-3")

    assert left.passing_runs == 11 and left.departure is not None
    assert (left.departure.position, left.departure.how) == (1, "other_arguments")
    assert left.departure.step.run_id == "args-1" and left.departure.step.turn == 2
    assert [step.tool for step in left.path] == ["list_dir", "read_file", None, None]
    assert alone.departure is None and alone.passing_runs == 10


def test_a_window_of_one_step_at_a_time_finds_the_same_variants(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _home(tmp_path)
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        whole = compare_group(store, task_runs(store, "pass-0"))
        monkeypatch.setattr(compare, "WINDOW_KEYS", 1)  # one step position per query
        stepped = compare_group(store, task_runs(store, "pass-0"), window=1)

    assert stepped.to_json() == whole.to_json()
    assert [v.runs for v in stepped.variants] == [7, 2, 2, 1, 1, 1, 1]


def test_the_demo_runs_compare_as_docs_explore_shows(tmp_path: Path) -> None:
    home = tmp_path / "demo"
    assert workbench_at(home, "demo", "--no-tui").returncode == 0
    walked = json.loads(workbench_at(home, "runs", "--status", "max_turns", "--json").stdout)

    report = _compared(home, "--task", walked[0]["run_id"])

    assert (report["runs"], report["passed"], report["failed"]) == (4, 3, 1)
    assert [step["tool"] for step in report["path"]] == ["list_dir", None]
    (variant,) = report["variants"]
    assert variant["departure"]["how"] == "other_arguments"
    assert variant["run_ids"] == [walked[0]["run_id"]]
    case = workbench_at(home, "compare", "--case", "demo-suite:walk-into-src")
    assert case.returncode == 0 and case.stdout.splitlines()[-1] == "every run followed this path"
    listed = json.loads(workbench_at(home, "runs", "--json").stdout)
    ids = [run["run_id"][:8] for run in listed if run["status"] != "max_turns"][:2]
    mixed = workbench_at(home, "compare", walked[0]["run_id"][:8], *ids)
    assert mixed.returncode == 1 and "these 3 runs are of 3 different tasks" in mixed.stderr


def test_twenty_thousand_runs_of_one_task_compare_in_bounded_memory(tmp_path: Path) -> None:
    """20,000 runs of one task made in SQL: a quarter read the wrong file and fail. Compare
    holds a window of the runs' step keys, never their events."""
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    with TraceStore.for_home(home) as store:
        store.query(
            """
            INSERT INTO runs (run_id, started_at, task, model, status, reason, origin,
                task_fingerprint)
            SELECT printf('%032x', i), TIMESTAMPTZ '2026-11-30 12:00:00+00' + to_seconds(i),
                'read the units', 'model-a',
                CASE WHEN i % 4 = 0 THEN 'max_turns' ELSE 'completed' END, '', 'agent', 'fp'
            FROM range(20000) t(i)
            """
        )
        store.query(
            """
            INSERT INTO event_rows (run_id, seq, type, turn, ts, event, source_path, batch)
            SELECT printf('%032x', i), k,
                ['tool_start', 'tool_end', 'tool_start', 'tool_end', 'model_response'][k + 1],
                [1, 1, 2, 2, 3][k + 1], TIMESTAMPTZ '2026-11-30 12:00:00+00',
                CASE k
                WHEN 0 THEN json_object('call_id', 'a' || i, 'name', 'list_dir',
                    'arguments', json_object('path', '.'))
                WHEN 1 THEN json_object('call_id', 'a' || i, 'ok', true, 'result', 'units.txt')
                WHEN 2 THEN json_object('call_id', 'b' || i, 'name', 'read_file',
                    'arguments', json_object('path',
                        CASE WHEN i % 4 = 0 THEN 'unit.txt' ELSE 'units.txt' END))
                WHEN 3 THEN json_object('call_id', 'b' || i, 'ok', i % 4 <> 0,
                    'result', 'metre second kilogram ' || i)
                ELSE json_object('message', json_object('role', 'assistant',
                    'content', 'The units are metre, second and kilogram.')) END,
                'generated', 1
            FROM range(20000) t(i), range(5) s(k)
            WHERE k < 4 OR i % 4 <> 0
            """
        )
        store.query("INSERT INTO run_batches SELECT printf('%032x', i), [1] FROM range(20000) t(i)")
    first = f"{0:032x}"

    done, peak_kb = workbench_peak(home, tmp_path, "compare", "--task", first, "--json")

    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert (report["runs"], report["passed"], report["on_path"]["runs"]) == (20000, 15000, 15000)
    assert [step["tool"] for step in report["path"]] == ["list_dir", "read_file", None, None]
    (variant,) = report["variants"]
    assert (variant["runs"], variant["failed"]) == (5000, 5000)
    assert variant["departure"]["how"] == "other_arguments"
    assert peak_kb < 600_000, f"workbench compare peaked at {peak_kb // 1024} MB"
