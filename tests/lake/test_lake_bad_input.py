"""A lake that cannot be used is one line and a non-zero exit, never a traceback, with no
credential in it, and the home's own runs untouched: an unreachable catalog or bucket, wrong
credentials, a lake of a newer schema version, a push killed mid-way (the next push
finishes it, nothing doubled)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.lake.test_lake_reads import cli, ok
from tests.support.lake_services import PASSWORD, PASSWORD_ROLE, free_port
from tests.support.processes import WAIT_S, WORKBENCH, killed_after
from traces.store.lake.config import LakeError, from_url
from traces.store.lake.connect import connect
from traces.store.lake.schema import LAKE_VERSION
from traces.store.sql import STORE_VERSION

pytestmark = pytest.mark.lake


def one_line_failure(home: Path, *argv: str) -> str:
    code, out, err = cli(home, *argv)
    assert code == 2, (out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("workbench: "), err
    return lines[0]


def untouched(home: Path, before: str) -> None:
    """The home's runs, as `runs` lists them, are what they were."""
    assert ok(home, "runs", "--samples") == before


def test_an_unreachable_catalog(demo_home: Path, lake_env) -> None:
    before = ok(demo_home, "runs", "--samples")
    bucket = lake_env.new_bucket()
    lake = f"postgresql://postgres@127.0.0.1:{free_port()}/lake?data=s3://{bucket}/runs/"
    for argv in (["runs"], ["push", "--all"], ["lake", "status"], ["pull", "abc"]):
        line = one_line_failure(demo_home, *argv, "--lake", lake)
        assert "cannot open the lake's catalog postgresql://postgres@127.0.0.1:" in line, line
    untouched(demo_home, before)


def test_wrong_credentials_for_the_catalog_show_no_password(
    demo_home: Path, postgres, lake_env
) -> None:
    database, bucket = postgres.new_database(), lake_env.new_bucket()
    wrong = postgres.uri(database, PASSWORD_ROLE, "not-the-password")
    line = one_line_failure(demo_home, "push", "--all", "--lake", f"{wrong}?data=s3://{bucket}/r/")
    assert "password authentication failed" in line and "not-the-password" not in line
    right = postgres.uri(database, PASSWORD_ROLE, PASSWORD)
    lake = f"{right}?data=s3://{bucket}/r/"
    assert ok(demo_home, "push", "--all", "--lake", lake).startswith("pushed 15 runs")
    shown = ok(demo_home, "lake", "status", "--lake", lake)
    shown += ok(demo_home, "lake", "status", "--json", "--lake", lake)
    assert PASSWORD not in shown and lake_env.env()["AWS_SECRET_ACCESS_KEY"] not in shown
    assert f"{PASSWORD_ROLE}:***@" in shown


def test_an_unreachable_or_missing_bucket(
    demo_home: Path, postgres, lake_env, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = ok(demo_home, "runs", "--samples")
    catalog = postgres.uri(postgres.new_database())
    line = one_line_failure(
        demo_home, "push", "--all", "--lake", f"{catalog}?data=s3://no-such-bucket-here/r/"
    )
    assert "cannot read the lake's bucket s3://no-such-bucket-here/r/" in line
    catalog = postgres.uri(postgres.new_database())
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    line = one_line_failure(
        demo_home, "push", "--all", "--lake", f"{catalog}?data=s3://{lake_env.new_bucket()}/r/"
    )
    assert "cannot read the lake's bucket" in line
    assert lake_env.env()["AWS_SECRET_ACCESS_KEY"] not in line
    untouched(demo_home, before)


def test_a_lake_of_a_newer_schema_version(demo_home: Path, lake_url: str) -> None:
    ok(demo_home, "push", "--all", "--lake", lake_url)
    with connect(from_url(lake_url), read_only=False) as conn:
        conn.execute("DELETE FROM lake.lake_meta WHERE key = 'lake_version'")
        conn.execute("INSERT INTO lake.lake_meta VALUES ('lake_version', '99')")
    before = ok(demo_home, "runs", "--samples")
    for argv in (["runs"], ["push", "--all"], ["lake", "status"], ["lake", "compact"]):
        line = one_line_failure(demo_home, *argv, "--lake", lake_url)
        said = f"is of schema version 99.{STORE_VERSION}, newer than this workbench's "
        assert said + f"({LAKE_VERSION}.{STORE_VERSION})" in line, line
    untouched(demo_home, before)


def _lake_runs(lake_url: str) -> tuple[int, int]:
    try:
        conn = connect(from_url(lake_url), read_only=True)
    except LakeError:  # not made yet
        return 0, 0
    with conn:
        if "run_rows" not in {r[0] for r in conn.execute("SHOW TABLES FROM lake").fetchall()}:
            return 0, 0
        row = conn.execute("SELECT count(*), count(DISTINCT run_id) FROM lake.run_rows")
        found = row.fetchone()
        assert found is not None
        return int(found[0]), int(found[1])


def test_a_push_killed_mid_way_is_finished_by_the_next(demo_home: Path, lake_url: str) -> None:
    # A commit a run: the push is killed after its first commits, long before its last.
    push = subprocess.Popen(
        [WORKBENCH, "--home", str(demo_home), "push", "--all", "--batch-events", "1",
         "--lake", lake_url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    with killed_after(push):
        deadline = time.monotonic() + WAIT_S
        while _lake_runs(lake_url)[0] == 0 and push.poll() is None:
            assert time.monotonic() < deadline, "no batch committed"
        os.kill(push.pid, signal.SIGKILL)
        push.wait()
    rows, runs = _lake_runs(lake_url)
    assert push.returncode == -signal.SIGKILL and 1 <= rows == runs < 15
    done = ok(demo_home, "push", "--all", "--json", "--lake", lake_url)
    assert f'"up_to_date": {runs}' in done
    assert _lake_runs(lake_url) == (15, 15)
    count = "SELECT count(*), count(DISTINCT (run_id, seq)) FROM events"
    assert ok(demo_home, "sql", count, "--lake", lake_url) == ok(demo_home, "sql", count)
