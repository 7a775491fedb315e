"""Naming a lake: lake.toml and --lake URLs, where the bucket's settings come from, and that
a password given anyway is never shown. Plain Python: no extension, no server."""

from __future__ import annotations

from pathlib import Path

import pytest

from traces.store.lake.config import (
    LakeError,
    for_home,
    from_url,
    s3_options,
    without_password,
)


def test_a_url_is_the_catalog_with_its_data_path() -> None:
    lake = from_url("postgresql://wb:secret@db:5432/lake?sslmode=require&data=s3://b/p")
    assert lake.catalog == "postgresql://wb:secret@db:5432/lake?sslmode=require"
    assert lake.data == "s3://b/p/" and lake.on_postgres and lake.on_s3
    assert lake.attach_target() == f"ducklake:postgres:{lake.catalog}"
    assert "secret" not in lake.label and "wb:***@db:5432" in lake.label
    with pytest.raises(LakeError, match=r"names no data path; add \?data="):
        from_url("postgresql://wb:secret@db/lake")


def test_passwords_are_left_out_of_what_is_shown() -> None:
    assert without_password("dbname=lake password=hunter2 host=db") == (
        "dbname=lake password=*** host=db"
    )
    assert without_password("postgresql://u:p%40ss@h/db?password=x") == (
        "postgresql://u:***@h/db?password=%2A%2A%2A"
    )


def test_lake_toml_paths_are_from_the_home_and_credentials_are_refused(tmp_path: Path) -> None:
    (tmp_path / "lake.toml").write_text('catalog = "lake/cat.ducklake"\ndata = "lake/data"\n')
    lake = for_home(tmp_path, None)
    assert lake.catalog == str(tmp_path / "lake/cat.ducklake")
    assert lake.data == f"{tmp_path / 'lake/data'}/" and not lake.on_postgres
    (tmp_path / "lake.toml").write_text(
        'catalog = "postgresql://db/lake"\ndata = "s3://b/"\n[s3]\nsecret = "x"\n'
    )
    with pytest.raises(LakeError, match="holds bucket credentials; keep them in the environment"):
        for_home(tmp_path, None)
    with pytest.raises(LakeError, match="no lake configured"):
        for_home(tmp_path / "elsewhere", None)


def test_the_bucket_settings_come_from_lake_toml_then_environment_then_aws_config(
    tmp_path: Path,
) -> None:
    credentials = tmp_path / "credentials"
    credentials.write_text(
        "[team]\naws_access_key_id = AKIAFILE\naws_secret_access_key = from-file\n"
    )
    lake = from_url("postgresql://db/lake?data=s3://b/p/")
    env = {"AWS_PROFILE": "team", "AWS_SHARED_CREDENTIALS_FILE": str(credentials),
           "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_DEFAULT_REGION": "eu-west-1",
           "AWS_ENDPOINT_URL": "http://127.0.0.1:9000"}  # fmt: skip
    found = s3_options(lake, env)
    assert found == {
        "key_id": "AKIAFILE",
        "secret": "from-file",
        "region": "eu-west-1",
        "endpoint": "127.0.0.1:9000",
        "use_ssl": "false",
        "url_style": "path",
    }
    env |= {"AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "from-env"}
    assert s3_options(lake, env)["key_id"] == "AKIAENV"
