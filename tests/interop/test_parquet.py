"""`workbench export-parquet` and `workbench sql --dataset`, through `workbench.cli.main`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from workbench.cli import main

COMPLETED = "276a0272c8a551178d8bfedb26070002.jsonl"  # the golden run that completed


def _sql(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, object]]:
    capsys.readouterr()
    assert main(["sql", *args, "--json"]) == 0
    rows: list[dict[str, object]] = json.loads(capsys.readouterr().out)
    return rows


COUNTS = """
SELECT 'runs' AS what, status AS key, count(*) AS n FROM {p}runs GROUP BY ALL
UNION ALL SELECT 'events', type, count(*) FROM {p}events GROUP BY ALL
UNION ALL SELECT 'tokens', run_id, sum(total_tokens) FROM {p}runs GROUP BY ALL
ORDER BY ALL
"""


def test_dataset_answers_with_the_same_counts_as_the_store(
    wb_home: Path, golden_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for path in golden_dir.glob("*.jsonl"):
        shutil.copy(path, wb_home / "traces" / path.name)
    dest = tmp_path / "dataset"
    assert main(["export-parquet", str(dest), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["new_run_rows"] == 8 and report["new_events"] > 100
    assert sorted(p.name for p in dest.iterdir()) == ["events", "runs"]
    assert all(p.name.startswith("day=") for p in (dest / "events").iterdir())

    store = _sql(capsys, COUNTS.format(p=""))
    dataset = _sql(capsys, COUNTS.format(p="dataset."), "--dataset", str(dest))
    assert dataset == store
    assert len(store) > 16

    # Nothing new: nothing written.
    assert main(["export-parquet", str(dest)]) == 0
    assert "nothing new" in capsys.readouterr().out
    assert len(list(dest.rglob("*.parquet"))) == 2


def test_appending_exports_only_what_is_new(
    wb_home: Path, golden_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (golden_dir / COMPLETED).read_text(encoding="utf-8").splitlines(keepends=True)
    trace = wb_home / "traces" / COMPLETED
    trace.write_text("".join(lines[:10]), encoding="utf-8")  # the run is still going
    dest = tmp_path / "dataset"
    assert main(["export-parquet", str(dest), "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert (first["new_events"], first["new_run_rows"]) == (10, 1)

    with trace.open("a", encoding="utf-8") as handle:  # then it ends
        handle.writelines(lines[10:])
    shutil.copy(golden_dir / "0aff3b5f0c7255e087e7f9bf8e1d13c9.jsonl", wb_home / "traces")
    assert main(["export-parquet", str(dest), "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["new_events"] == len(lines) - 10 + 13
    assert second["new_run_rows"] == 2

    # The grown run has two rows; `dataset.runs` shows it as it stands.
    query = "SELECT run_id, status, events FROM {}runs ORDER BY run_id"
    assert _sql(capsys, query.format("dataset."), "--dataset", str(dest)) == _sql(
        capsys, query.format("")
    )
    rows = _sql(capsys, "SELECT count(*) AS n FROM dataset.run_rows", "--dataset", str(dest))
    assert rows == [{"n": 3}]
    events = "SELECT count(*) AS n, count(DISTINCT (run_id, seq)) AS d FROM dataset.events"
    assert _sql(capsys, events, "--dataset", str(dest)) == [
        {"n": len(lines) + 13, "d": len(lines) + 13}
    ]


def test_dataset_errors_are_one_line(
    wb_home: Path, golden_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(golden_dir / COMPLETED, wb_home / "traces")
    assert main(["sql", "SELECT 1", "--dataset", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds no runs dataset" in err[0]
    assert main(["export-parquet", str(tmp_path / "ds")]) == 0
    assert main(["sql", "DELETE FROM runs", "--dataset", str(tmp_path / "ds")]) == 2
    assert "read-only" in capsys.readouterr().err


def test_event_lines_are_plain_strings_in_the_files(
    wb_home: Path, golden_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(golden_dir / COMPLETED, wb_home / "traces")
    dest = tmp_path / "ds"
    assert main(["export-parquet", str(dest)]) == 0
    schema = (
        "SELECT name, converted_type FROM parquet_schema("
        f"'{dest}/events/**/*.parquet') WHERE name = 'event'"
    )
    assert _sql(capsys, schema) == [{"name": "event", "converted_type": "UTF8"}]
    # … and JSON again when queried through `sql --dataset`.
    query = "SELECT event->>'type' AS type FROM dataset.events WHERE seq = 0"
    assert _sql(capsys, query, "--dataset", str(dest)) == [{"type": "run_start"}]
