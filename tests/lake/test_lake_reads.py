"""`workbench push` into a real lake (PostgreSQL catalog, moto's S3), then every read
command with --lake answering as it does on the home's own store: the same queries."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from tests.support.demo import demo_run
from traces.store.lake.schema import LAKE_VERSION
from traces.store.sql import STORE_VERSION
from workbench.cli import main

pytestmark = pytest.mark.lake


def cli(home: Path, *argv: str) -> tuple[int, str, str]:
    """`workbench --home HOME ARGV…` in this process (a process each would cost a second
    of start-up, dozens of times): exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--home", str(home), *argv])
    return code, out.getvalue(), err.getvalue()


def ok(home: Path, *argv: str) -> str:
    code, out, err = cli(home, *argv)
    assert code == 0, err
    return out


def test_reads_on_the_lake_answer_as_the_home_store_does(demo_home: Path, lake_url: str) -> None:
    pushed = json.loads(ok(demo_home, "push", "--all", "--json", "--lake", lake_url))
    assert pushed["runs"] == 15 and pushed["events"] > 200 and pushed["suite_runs"] == 1
    run = demo_run(demo_home, "tool-error-recovered")
    for argv in (
        ["runs", "--json", "--samples"],
        ["runs", "--failed"],
        ["show", run],
        ["show", run, "--json"],
        ["show", run, "--timeline"],
        ["search", "celsius"],
        ["sql", "SELECT name, count(*) FROM tool_calls GROUP BY name ORDER BY name"],
        ["stats"],
        ["failures"],
        ["diff", run, demo_run(demo_home, "completed")],
        ["export", run, "--format", "md"],
    ):
        local = cli(demo_home, *argv)
        on_lake = cli(demo_home, *argv, "--lake", lake_url)
        assert local[0] in (0, 1), local[2]  # diff: 1 when the runs differ
        assert on_lake[:2] == local[:2], argv


def test_pushing_twice_adds_nothing(demo_home: Path, lake_url: str) -> None:
    first = ok(demo_home, "push", "--all", "--lake", lake_url)
    assert first.startswith("pushed 15 runs (")
    again = json.loads(ok(demo_home, "push", "--all", "--json", "--lake", lake_url))
    assert (again["runs"], again["events"], again["up_to_date"]) == (0, 0, 15)
    counted = ok(demo_home, "sql", "SELECT count(*), count(DISTINCT (run_id, seq)) FROM events",
                 "--json", "--lake", lake_url)  # fmt: skip
    local = ok(demo_home, "sql", "SELECT count(*), count(DISTINCT (run_id, seq)) FROM events",
               "--json")  # fmt: skip
    assert counted == local


def test_push_of_named_runs_and_since(demo_home: Path, lake_url: str) -> None:
    run = demo_run(demo_home, "tool-error-recovered")
    assert ok(demo_home, "push", run[:8], "--lake", lake_url).startswith("pushed 1 run (")
    listed = json.loads(ok(demo_home, "runs", "--json", "--samples", "--lake", lake_url))
    assert [row["run_id"] for row in listed] == [run]
    # The demo's runs all started just now: --since 1d is all of them, the one above aside.
    assert ok(demo_home, "push", "--since", "1d", "--lake", lake_url).startswith("pushed 14 runs")


def test_replay_and_fork_read_the_parent_from_the_lake(demo_home: Path, lake_url: str) -> None:
    ok(demo_home, "push", "--all", "--lake", lake_url)
    run = demo_run(demo_home, "tool-error-recovered")
    assert "identical decision chain" in ok(demo_home, "replay", run, "--lake", lake_url)
    plan = ok(demo_home, "fork", run, "--turn", "1", "--dry-run", "--lake", lake_url)
    assert plan == ok(demo_home, "fork", run, "--turn", "1", "--dry-run")


def test_pull_brings_runs_into_another_home(demo_home: Path, lake_url: str, tmp_path: Path) -> None:
    ok(demo_home, "push", "--all", "--lake", lake_url)
    run = demo_run(demo_home, "tool-error-recovered")
    other = tmp_path / "laptop"
    (other / "traces").mkdir(parents=True)
    assert ok(other, "pull", run[:10], "--lake", lake_url).startswith("pulled 1 run (")
    assert ok(other, "show", run) == ok(demo_home, "show", run)
    source = (demo_home / "traces" / f"{run}.jsonl").read_bytes()
    assert (other / "traces" / f"{run}.jsonl").read_bytes() == source
    again = ok(other, "pull", run, "--lake", lake_url)
    assert again.startswith("pulled 0 runs") and "1 already there" in again


def test_the_home_lake_toml_names_the_lake(demo_home: Path, postgres, lake_env) -> None:
    database, bucket = postgres.new_database(), lake_env.new_bucket()
    (demo_home / "lake.toml").write_text(
        f'catalog = "{postgres.uri(database)}"\ndata = "s3://{bucket}/team/"\n'
    )
    assert ok(demo_home, "push", "--all").startswith("pushed 15 runs")
    run = demo_run(demo_home, "tool-error-recovered")
    # `--lake` alone before a run id: the home's lake, the id still the run.
    assert ok(demo_home, "show", "--lake", run) == ok(demo_home, "show", run)
    status = ok(demo_home, "lake", "status")
    assert f"data            s3://{bucket}/team/" in status
    assert "runs            15" in status
    assert f"schema version  {LAKE_VERSION}.{STORE_VERSION}" in status


def test_a_lake_on_one_machine_a_duckdb_catalog_and_a_folder(demo_home: Path, tmp_path: Path):
    lake = f"{tmp_path / 'lake' / 'catalog.ducklake'}?data={tmp_path / 'lake' / 'data'}"
    (tmp_path / "lake").mkdir()
    assert ok(demo_home, "push", "--all", "--lake", lake).startswith("pushed 15 runs")
    assert ok(demo_home, "runs", "--lake", lake) == ok(demo_home, "runs")
    assert any((tmp_path / "lake" / "data").rglob("*.parquet"))


def test_what_was_added_since_is_all_a_push_sends(demo_home: Path, lake_url: str) -> None:
    ok(demo_home, "push", "--all", "--lake", lake_url)
    run = demo_run(demo_home, "tool-error-recovered")
    ok(demo_home, "note", run, "--label", "flaky", "--text", "reads a missing file first")
    added = json.loads(ok(demo_home, "push", "--all", "--json", "--lake", lake_url))
    assert (added["runs"], added["events"], added["annotations"]) == (0, 0, 1)
    again = json.loads(ok(demo_home, "push", "--all", "--json", "--lake", lake_url))
    assert again["annotations"] == 0
    labelled = ["runs", "--label", "flaky", "--json"]
    assert ok(demo_home, *labelled, "--lake", lake_url) == ok(demo_home, *labelled)


def test_a_lake_made_but_holding_nothing_yet_lists_no_runs(demo_home: Path, lake_url: str) -> None:
    from traces.store.lake.config import from_url
    from traces.store.lake.connect import connect

    connect(from_url(lake_url), read_only=False).close()  # a first ATTACH makes the lake
    assert json.loads(ok(demo_home, "runs", "--json", "--lake", lake_url)) == []
    assert "runs            0" in ok(demo_home, "lake", "status", "--lake", lake_url)
