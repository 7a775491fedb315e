"""The read commands through `workbench.cli.main`, and one real `workbench` subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from traces.events import RUN_STATUSES
from workbench.cli import main


@pytest.fixture
def home_with_golden(wb_home: Path, golden_dir: Path) -> Path:
    for path in golden_dir.glob("*.jsonl"):
        shutil.copy(path, wb_home / "traces" / path.name)
    return wb_home


def test_ingest_then_runs_lists_every_golden_status(
    wb_home: Path, golden_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ingest", str(golden_dir)]) == 0
    out = capsys.readouterr()
    assert "8 new run(s)" in out.out
    assert "cut off" in out.err  # the incomplete golden run was killed mid-line
    assert main(["runs", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert sorted(run["status"] for run in runs) == sorted(RUN_STATUSES)
    assert main(["runs", "--failed", "--json"]) == 0
    assert "completed" not in {r["status"] for r in json.loads(capsys.readouterr().out)}


def test_ingest_of_a_missing_path_is_a_usage_error_and_ingests_the_others(
    wb_home: Path, golden_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = wb_home / "no-such-folder"
    assert main(["ingest", str(missing), str(golden_dir)]) == 2
    out = capsys.readouterr()
    assert f"{missing}: no such file or folder" in out.err
    assert "8 new run(s)" in out.out


def test_read_commands_ingest_the_home_first(
    home_with_golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "--status", "max_turns"]) == 0
    out = capsys.readouterr().out
    assert "max_turns" in out and "completed" not in out


def test_show_by_prefix_prints_the_chain(
    home_with_golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["runs", "--status", "completed", "--json"])
    run_id = json.loads(capsys.readouterr().out)[0]["run_id"]
    assert main(["show", run_id[:6]]) == 0
    out = capsys.readouterr().out
    assert "turn 1" in out and "attempt 1 failed" in out and "get_current_time" in out
    assert "end: completed" in out
    assert main(["show", run_id[:6], "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["chain"]["status"] == "completed"
    tool = doc["chain"]["turns"][0]["tool_calls"][1]
    assert tool["name"] == "get_current_time" and len(tool["mcp_frames"]) == 2


def test_show_unknown_run_is_one_line(
    home_with_golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "zzzz"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("workbench: no run id starts with 'zzzz'")


def test_sql_json_and_read_only(home_with_golden: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql", "SELECT status FROM runs ORDER BY status", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [row["status"] for row in rows] == sorted(RUN_STATUSES)
    assert main(["sql", "DROP TABLE runs"]) == 2
    assert "read-only" in capsys.readouterr().err
    assert main(["sql", "SELEC nonsense"]) == 2


def test_sql_on_an_unknown_table_names_the_tables_there(
    home_with_golden: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["sql", "SELECT * FROM run"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]  # after any ingest progress
    assert line.startswith("workbench: Catalog Error: Table with name run does not exist")
    listed = line.split("; the tables and views are: ")[1].split(", ")
    assert {"runs", "events", "model_calls", "tool_calls", "tool_schemas"} <= set(listed)
    assert main(["sql", "SELECT bogus FROM runs"]) == 2  # a wrong column: DuckDB's own words
    assert "tables and views" not in capsys.readouterr().err


def test_ingest_of_nothing_fails_with_one_line(
    wb_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "none").mkdir()
    assert main(["ingest", str(tmp_path / "none")]) == 1
    assert capsys.readouterr().err.strip() == (
        f"workbench: {tmp_path / 'none'}: no .jsonl traces in this folder"
    )


def test_corrupt_database_is_one_line(wb_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (wb_home / "workbench.duckdb").write_bytes(b"junk" * 1000)
    assert main(["runs"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "workbench.duckdb" in err


def test_schema_prints_the_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "run_start" in json.dumps(schema)


def test_real_workbench_process(home_with_golden: Path) -> None:
    exe = Path(sys.executable).with_name("workbench")
    result = subprocess.run(
        [str(exe), "--home", str(home_with_golden), "runs", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)) == 8


@pytest.mark.parametrize(
    "argv",
    [
        ["runs"],
        ["show", "3fa2"],
        ["sql", "SELECT 1"],
        ["search", "word"],
        ["export", "3fa2"],
        ["export-parquet", "dataset"],
        ["replay", "3fa2"],
        ["diff", "3fa2", "0ddb"],
        ["serve-model", "--replay", "3fa2"],
    ],
)
def test_reading_a_home_that_does_not_exist_says_so_and_makes_nothing(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "mistyped"
    assert main([*argv, "--home", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"workbench: no workbench home at {missing} (check --home or $WORKBENCH_HOME); "
        "`workbench run`, `workbench demo` or `workbench ingest PATH` makes one\n"
    )
    assert sorted(tmp_path.iterdir()) == []


def test_a_trace_path_needs_no_home_and_ingest_makes_one(
    tmp_path: Path, golden_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "new-home"
    trace = next(golden_dir.glob("*.jsonl"))
    assert main(["export", str(trace), "--home", str(missing)]) == 0
    assert not missing.exists()
    assert main(["ingest", str(trace), "--home", str(missing)]) == 0
    assert "1 new run(s)" in capsys.readouterr().out
    assert main(["runs", "--home", str(missing)]) == 0


def test_show_of_a_run_ended_without_a_reason_has_no_dangling_colon(
    wb_home: Path, golden_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = next(p for p in golden_dir.glob("*.jsonl") if '"completed"' in p.read_text())
    lines = [json.loads(line) for line in source.read_text().splitlines()]
    for event in lines:
        if event["type"] == "run_end":
            event["reason"] = ""  # captured and imported runs often have none
    copy = wb_home / "traces" / source.name
    copy.write_text("".join(json.dumps(event) + "\n" for event in lines))
    assert main(["show", source.stem[:8]]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "end: completed" in out
    assert not any(line.rstrip().endswith(":") for line in out if line.startswith("end:"))


def test_a_time_written_without_an_offset_is_read_as_utc(
    wb_home: Path, golden_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = next(p for p in golden_dir.glob("*.jsonl") if '"completed"' in p.read_text())
    lines = [json.loads(line) for line in source.read_text().splitlines()]
    lines[1]["ts"] = lines[1]["ts"].removesuffix("Z")  # no offset: UTC, as the contract says
    (wb_home / "traces" / source.name).write_text("".join(json.dumps(e) + "\n" for e in lines))
    for flags in ([], ["--timeline"], ["--json"]):
        assert main(["show", source.stem[:8], *flags]) == 0, capsys.readouterr().err
    assert "Traceback" not in capsys.readouterr().err
