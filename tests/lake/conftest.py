"""The lake's tests run against real components (tests/support/lake_services.py): a private
PostgreSQL cluster and moto's S3 server, started once per session, and DuckDB's DuckLake,
httpfs and postgres extensions from the `lake` extra's wheels. Each test gets a lake of its
own (a new database and a new bucket), and a copy of a home the demo recorded."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.demo import copied_home, record_demo
from tests.support.lake_services import S3, Postgres, Unavailable, postgres_cluster, s3_server
from workbench.cli import main


def _extensions_missing() -> str | None:
    from traces.store.lake.connect import INSTALL_HINT, missing_extensions

    missing = missing_extensions()
    if missing:
        return f"DuckDB's {', '.join(missing)} extension wheels are not installed ({INSTALL_HINT})"
    return None


@pytest.fixture(autouse=True)
def _lake_extensions(request: pytest.FixtureRequest) -> None:
    """A test marked `lake` is skipped, saying what to install, without the lake extra."""
    if request.node.get_closest_marker("lake") and (reason := _extensions_missing()):
        pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    try:
        with postgres_cluster() as server:
            yield server
    except Unavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def s3() -> Iterator[S3]:
    try:
        with s3_server() as server:
            yield server
    except Unavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def lake_env(s3: S3, monkeypatch: pytest.MonkeyPatch) -> S3:
    """The bucket's endpoint and credentials in the environment (subprocesses inherit it)."""
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL_S3", "PGPASSWORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    return s3


@pytest.fixture
def lake_url(postgres: Postgres, lake_env: S3) -> str:
    """A new, empty lake: its catalog a new PostgreSQL database, its data a new bucket."""
    return f"{postgres.uri(postgres.new_database())}?data=s3://{lake_env.new_bucket()}/runs/"


@pytest.fixture(scope="session")
def demo_home_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_demo(tmp_path_factory.mktemp("lake-demo") / "home")


@pytest.fixture
def demo_home(demo_home_once: Path, tmp_path: Path) -> Path:
    """A home of the demo's runs (and its suite's results), for this test to change; its
    store has met the copied traces (the notes that they were read from the first home's
    path are said once, here, not in the test)."""
    home = copied_home(demo_home_once, tmp_path / "demo-home")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["--home", str(home), "runs"]) == 0
    return home
