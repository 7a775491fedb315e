"""`workbench failures` as a real process (issue 38, part 2): failing runs grouped by a
failure signature whose volatile parts are masked, on generated runs whose right groups
are known, and on the demo's failing runs."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.support.failing_runs import failing_run
from tests.support.processes import workbench_at, workbench_peak
from traces.store import TraceStore
from traces.store.failures import masked

NOW = datetime.now(UTC).replace(microsecond=0)


_workbench = workbench_at


def _failures(home: Path, *argv: str) -> dict[str, Any]:
    done = _workbench(home, "failures", "--json", *argv)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _known_home(home: Path) -> Path:
    """Three runs that failed the same way (read_file's error, after list_dir) with other
    numbers, paths, ids, hex, quoted values and times in the error; a decoy whose failing
    tool differs, one whose status differs, one that failed in the model, an old one of
    the first kind (ten days back), and a run that recovered from the same tool error."""
    folder = home / "traces"
    folder.mkdir(parents=True)
    errors = [
        "Error: no file '/tmp/work/a1.txt' (call_8f3a2b, 2026-12-01T10:00:00Z) after 31 ms",
        "Error: no file '/srv/x/b/c22.txt' (call_0000ff, 2026-12-02T11:30:05Z) after 7 ms",
        'Error: no file "C:\\data\\z.txt" (call_9, 2026-11-30 09:00) after 1250 ms',
    ]
    for index, error in enumerate(errors):
        failing_run(
            folder,
            f"same{index}",
            at=NOW - timedelta(days=index),
            error=error,
            model="model-a" if index else "model-b",
        )
    failing_run(folder, "oldsame", at=NOW - timedelta(days=10), error=errors[0])
    failing_run(folder, "othertool", at=NOW - timedelta(hours=1), tool="save_note", error=errors[1])
    failing_run(
        folder, "otherstatus", at=NOW - timedelta(hours=2), status="timeout", error=errors[2]
    )
    failing_run(
        folder,
        "modelfail",
        at=NOW - timedelta(hours=3),
        tool=None,
        model_error="upstream 0xdeadbeef99 returned 503 at 2026-12-01T10:00:00Z",
        status="error",
        reason="the model call failed after 3 attempts",
    )
    failing_run(folder, "recovered", at=NOW, status="completed", reason="the model answered")
    return home


def test_runs_failing_the_same_way_with_other_numbers_paths_and_ids_form_one_group(
    tmp_path: Path,
) -> None:
    report = _failures(_known_home(tmp_path / "home"))

    groups = {frozenset(g["examples"]): g for g in report["groups"]}
    assert report["failed_runs"] == 7 and report["total_groups"] == 4
    same = report["groups"][0]  # the biggest first
    assert same["runs"] == 4 and same["examples"] == ["same0", "same1", "same2"]
    assert same["first_run"] == "oldsame"
    assert (same["status"], same["step"], same["tool"]) == ("max_turns", "tool error", "read_file")
    assert same["error"] == "tool_failure: Error: no file <str> (<id>, <time>) after <n> ms"
    assert same["reason"] == "reached max_turns=<n>"
    assert same["tools_before"] == ["list_dir"]
    assert same["models"] == ["model-a", "model-b"] and same["tasks"] == 1
    # The decoys: another failing tool, another status: each a group of its own.
    assert groups[frozenset(["othertool"])]["tool"] == "save_note"
    assert groups[frozenset(["otherstatus"])]["status"] == "timeout"
    model = groups[frozenset(["modelfail"])]
    assert (model["step"], model["tool"], model["tools_before"]) == (
        "error in model",
        None,
        ["list_dir"],
    )
    assert model["error"] == "http_error: upstream <hex> returned <n> at <time>"
    assert len({g["signature"] for g in report["groups"]}) == 4
    # Runs per day on one axis of days shared by every group, oldest first.
    assert report["days"][-1] == NOW.date().isoformat() and len(report["days"]) == 11
    assert same["per_day"][0] == 1 and sum(same["per_day"]) == 4
    assert all(len(g["per_day"]) == 11 for g in report["groups"])


def test_since_keeps_the_failing_runs_started_after_it(tmp_path: Path) -> None:
    home = _known_home(tmp_path / "home")

    report = _failures(home, "--since", "7d")

    assert report["failed_runs"] == 6 and report["since"] is not None
    same = report["groups"][0]
    assert same["runs"] == 3 and same["first_run"] == "same2"
    assert report["days"][0] == (NOW - timedelta(days=7)).date().isoformat()
    assert _failures(home, "--since", (NOW + timedelta(days=1)).date().isoformat())["groups"] == []


def test_the_text_names_each_group_with_its_signature_and_runs_per_day(tmp_path: Path) -> None:
    home = _known_home(tmp_path / "home")
    signature = _failures(home)["groups"][0]["signature"]

    done = _workbench(home, "failures", "--limit", "2", "--examples", "1")

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("7 failing runs in 4 groups (the 2 biggest shown)")
    assert f"    4 × max_turns · tool error in read_file   [{signature}]" in lines
    assert "        after    list_dir" in lines
    assert (
        "        error    tool_failure: Error: no file <str> (<id>, <time>) after <n> ms" in lines
    )
    per_day = next(line for line in lines if "per day │" in line)
    assert per_day.split("│")[1][0] != " " and len(per_day.split("│")[1]) == 11
    assert "        runs     same0" in lines


def test_a_signature_is_the_digest_of_its_parts_and_runs_lists_its_group(tmp_path: Path) -> None:
    """The signature is computed in SQL (so `runs --signature` filters in a WHERE); it is
    still the documented digest, the same in any store, that `workbench check` remembers."""
    home = _known_home(tmp_path / "home")
    groups = _failures(home)["groups"]
    same = groups[0]
    parts = [same["status"], same["reason"], same["step"], same["tool"] or "", same["error"]]
    digest = hashlib.sha256("\x1f".join([*parts, *same["tools_before"]]).encode())
    assert same["signature"] == digest.hexdigest()[:8]

    listed = _workbench(home, "runs", "--json", "--signature", same["signature"])
    assert listed.returncode == 0, listed.stderr
    assert sorted(r["run_id"] for r in json.loads(listed.stdout)) == [
        "oldsame", "same0", "same1", "same2"
    ]  # fmt: skip
    # A prefix names the group too; other filters narrow it as they narrow any listing.
    narrowed = _workbench(
        home, "runs", "--json", "--signature", same["signature"][:5].upper(), "--model", "model-b"
    )
    assert [r["run_id"] for r in json.loads(narrowed.stdout)] == ["same0"]
    model = next(g for g in groups if g["step"] == "error in model")
    only = _workbench(home, "runs", "--json", "--signature", model["signature"])
    assert [r["run_id"] for r in json.loads(only.stdout)] == ["modelfail"]
    bad = _workbench(home, "runs", "--signature", "not-hex")
    assert bad.returncode == 2 and "is not a failure signature" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_a_group_says_what_changed_since_the_run_of_its_task_before_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / "traces"
    folder.mkdir(parents=True)
    for hours, run_id in ((3, "pass1"), (2, "pass2")):
        at = NOW - timedelta(hours=hours)
        failing_run(folder, run_id, at=at, status="completed", reason="answered", tool=None)
    changed = {"read_file": "Reads a file, or fails."}
    for index in range(2):
        failing_run(
            folder,
            f"fail{index}",
            at=NOW - timedelta(hours=1 - index),
            model="model-b",
            system_prompt="You read files fast.",
            descriptions=changed,
        )
    # A decoy of another task, failing the other way, with nothing before it to compare.
    failing_run(folder, "other", at=NOW, task="other task", tool="save_note")

    groups = {g["first_run"]: g for g in _failures(home)["groups"]}

    changes = groups["fail0"]["changes_at_first"]
    # The run before is of the same task text though not of the same task fingerprint (it
    # holds the system prompt, which changed): by the fingerprint nothing came before fail0.
    with TraceStore.for_reading(home) as store:
        assert store.run("fail0").task_fingerprint != store.run("pass2").task_fingerprint
    assert (changes["run_before"], changes["status_before"]) == ("pass2", "completed")
    assert len(changes["changed"]) == 3
    assert changes["changed"][0] == "model model-a → model-b"
    assert changes["changed"][1].startswith("system prompt ")
    assert changes["changed"][2].startswith("tool read_file description ")
    assert groups["other"]["changes_at_first"] == {
        "run_before": None,
        "status_before": None,
        "changed": [],
    }
    text = _workbench(home, "failures").stdout.splitlines()
    assert "        changed  model model-a → model-b; system prompt " in "\n".join(text)
    assert "                 since pass2 (completed), the run before fail0" in text
    assert "        first    other, the first run of its task" in text


def test_an_empty_home_has_no_failures_and_exits_0(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)

    done = _workbench(home, "failures")

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("no failing runs")
    assert _failures(home) == {
        "since": None,
        "failed_runs": 0,
        "total_groups": 0,
        "days": [],
        "groups": [],
    }


def test_a_bad_since_or_home_is_one_line(tmp_path: Path) -> None:
    bad = _workbench(tmp_path, "failures", "--since", "last tuesday")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    missing = _workbench(tmp_path / "nowhere", "failures")
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "Traceback" not in bad.stderr + missing.stderr


def test_the_demo_failing_runs_each_fail_their_own_way(tmp_path: Path) -> None:
    home = tmp_path / "home"
    demo = _workbench(home, "demo", "--no-tui")
    assert demo.returncode == 0, demo.stderr

    report = _failures(home)

    statuses = sorted(g["status"] for g in report["groups"])
    assert statuses == ["duplicate_tool_calls", "max_turns", "timeout", "token_budget"]
    timeout = next(g for g in report["groups"] if g["status"] == "timeout")
    assert timeout["step"] == "error in model"
    assert timeout["reason"] == "model call hit the model time limit of <n> s"


def test_masking_keeps_words_and_masks_what_varies(tmp_path: Path) -> None:
    cases = {
        "turn 2 repeated turn 1's tool calls": "turn <n> repeated turn <n>'s tool calls",
        "id 123e4567-e89b-12d3-a456-426614174000 gone": "id <id> gone",
        "see https://x.example/a?b=1 now": "see <url> now",
        "wrote ./out/report.md and ~/x": "wrote <path> and <path>",
        'bad value \'abc\' in {"k": "v"}': "bad value <str> in {<str>: <str>}",
    }
    with TraceStore.open(tmp_path / "store.duckdb") as store:
        for text, expected in cases.items():
            _, rows = store.query(f"SELECT {masked('$text')}", {"text": text})
            assert rows[0][0] == expected, text


def test_a_million_runs_are_grouped_in_sql_not_in_python(tmp_path: Path) -> None:
    """200,000 of a million runs fail, each with its own path, request id and duration in
    its error, calling one of two tools: two groups, counted in DuckDB."""
    home = tmp_path / "home"
    (home / "traces").mkdir(parents=True)
    with TraceStore.for_home(home) as store:
        store.query(
            """
            INSERT INTO runs (run_id, started_at, task, model, status, reason, origin)
            SELECT printf('%032x', i),
                TIMESTAMPTZ '2026-11-30 12:00:00+00' - to_days(CAST(i % 10 AS INTEGER)),
                'task ' || (i % 7), CASE WHEN i % 4 = 0 THEN 'model-a' ELSE 'model-b' END,
                CASE WHEN i % 5 = 0 THEN 'max_turns' ELSE 'completed' END,
                CASE WHEN i % 5 = 0 THEN 'reached max_turns=' || (i % 9) ELSE 'done' END,
                'agent'
            FROM range(1000000) t(i)
            """
        )
        store.query(
            """
            INSERT INTO event_rows (run_id, seq, type, turn, ts, event, source_path, batch)
            SELECT printf('%032x', i), k, ['tool_start', 'tool_end', 'run_end'][k + 1],
                CASE WHEN k < 2 THEN 1 END, TIMESTAMPTZ '2026-11-30 12:00:00+00',
                CASE k WHEN 2 THEN json_object('status', 'max_turns')
                ELSE json_object('call_id', 'call_' || i,
                    'name', CASE WHEN i % 3 = 0 THEN 'save_note' ELSE 'read_file' END,
                    'ok', false, 'error', 'tool_failure',
                    'result', 'Error: no file ''/data/f' || i || '.txt'' (req_' || (i * 7919)
                        || ') after ' || (i % 97) || ' ms') END,
                'generated', 1
            FROM range(0, 1000000, 5) t(i), range(3) s(k)
            """
        )
    done, peak_kb = workbench_peak(home, tmp_path, "failures", "--json", "--examples", "1")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)

    assert report["failed_runs"] == 200_000 and report["total_groups"] == 2
    assert [(g["tool"], g["runs"]) for g in report["groups"]] == [
        ("read_file", 133_333),
        ("save_note", 66_667),
    ]
    assert report["groups"][0]["error"] == "tool_failure: Error: no file <str> (<id>) after <n> ms"
    assert report["groups"][0]["per_day"] == [66_667, 0, 0, 0, 0, 66_666]
    # Runs without their run_start: what changed before the first is not known, not "nothing".
    assert report["groups"][0]["changes_at_first"]["changed"] is None
    assert peak_kb < 600_000, f"workbench failures peaked at {peak_kb // 1024} MB"
