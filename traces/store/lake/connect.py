"""Attaching a lake to a DuckDB connection: the extensions from their wheels (offline), the
bucket's secret, the catalog, a look at the bucket and the lake's schema version; every
failure one line, with no credential in it."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from traces.store.db import duckdb
from traces.store.lake.config import LakeConfig, LakeError, s3_options, without_password
from traces.store.lake.schema import LAKE, LAKE_VERSION, versions
from traces.store.sql import STORE_VERSION

EXTENSIONS = ("httpfs", "postgres", "ducklake")
INSTALL_HINT = "pip install 'agent-workbench[lake]'"


def extension_path(name: str) -> Path | None:
    """The extension's binary in its PyPI wheel (`duckdb-extension-<name>`), built for this
    DuckDB; None when the wheel, or one for this DuckDB, is not installed."""
    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    if spec is None or not spec.submodule_search_locations:
        return None
    version = _duckdb_version()
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "extensions" / f"v{version}" / f"{name}.duckdb_extension"
        if path.is_file():
            return path
    return None


def _duckdb_version() -> str:
    from importlib.metadata import version

    return version("duckdb")


def missing_extensions() -> list[str]:
    return [name for name in EXTENSIONS if extension_path(name) is None]


def check_installed() -> None:
    """A `LakeError` saying what to install when the lake extra is not (or not for this
    DuckDB: the wheels are built for one release)."""
    missing = missing_extensions()
    if missing:
        raise LakeError(
            f"the lake needs DuckDB's {', '.join(missing)} extension(s) for DuckDB "
            f"{_duckdb_version()}, which are not installed; install them with "
            f"`{INSTALL_HINT}`"
        )


def load_extensions(cur: duckdb.DuckDBPyConnection, names: tuple[str, ...] = EXTENSIONS) -> None:
    """Load the extensions from their wheels: never from the internet (autoinstall off).
    Each is installed (copied into DuckDB's extension folder) only when the copy there did
    not come from this wheel: a copy costs a second."""
    check_installed()
    cur.execute("SET autoinstall_known_extensions = false")
    cur.execute("SET autoload_known_extensions = false")
    installed = dict(cur.execute(_INSTALLED).fetchall())
    for name in names:
        path = str(extension_path(name))
        if installed.get(_CANONICAL.get(name, name)) != path:
            cur.execute(f"INSTALL '{_quoted(path)}'")
        cur.execute(f"LOAD {name}")


_INSTALLED = "SELECT extension_name, installed_from FROM duckdb_extensions() WHERE installed"
_CANONICAL = {"postgres": "postgres_scanner"}


def needed(config: LakeConfig) -> tuple[str, ...]:
    """The extensions this lake needs: httpfs for a bucket, postgres for its catalog."""
    return tuple(
        name
        for name, wanted in (
            ("httpfs", config.on_s3),
            ("postgres", config.on_postgres),
            ("ducklake", True),
        )
        if wanted
    )


def attach(cur: duckdb.DuckDBPyConnection, config: LakeConfig, *, read_only: bool) -> None:
    """ATTACH the lake as `lake`; one `LakeError` line when the catalog or the bucket cannot
    be reached or read, or the lake is of another schema version."""
    load_extensions(cur, needed(config))
    secrets = s3_options(config) if config.on_s3 else {}
    if config.on_s3:
        options = ", ".join(f"{key.upper()} '{_quoted(value)}'" for key, value in secrets.items())
        cur.execute(f"CREATE OR REPLACE TEMPORARY SECRET lake_s3 (TYPE s3, {options})")
    elif not read_only:
        Path(config.data).mkdir(parents=True, exist_ok=True)
    if config.on_s3:
        try:  # before the catalog: a first ATTACH makes the lake, with this path
            cur.execute("SELECT count(*) FROM glob($path)", {"path": f"{config.data}*"})
        except duckdb.Error as exc:
            raise LakeError(
                f"cannot read the lake's bucket {config.data}: {scrubbed(exc, config, secrets)}"
                "; check the endpoint and the credentials (AWS_ACCESS_KEY_ID, "
                "AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL)"
            ) from None
    mode = ", READ_ONLY" if read_only else ""
    target = config.attach_target()
    try:
        cur.execute(
            f"ATTACH '{_quoted(target)}' AS {LAKE} (DATA_PATH '{_quoted(config.data)}'{mode})"
        )
    except duckdb.Error as exc:
        if read_only and "creating a new DuckLake is explicitly disabled" in str(exc):
            raise LakeError(
                f"there is no lake at {config.label} yet; `workbench push` makes it"
            ) from None
        raise LakeError(
            f"cannot open the lake's catalog {without_password(config.catalog)}: "
            f"{scrubbed(exc, config, secrets)}"
        ) from None
    check_version(cur, config)


def check_version(cur: duckdb.DuckDBPyConnection, config: LakeConfig) -> None:
    found = versions(cur)
    if not found:
        return
    lake, store = int(found.get("lake_version", 0)), int(found.get("store_version", 0))
    if lake == LAKE_VERSION and store == STORE_VERSION:
        return
    newer = lake > LAKE_VERSION or store > STORE_VERSION
    raise LakeError(
        f"the lake {config.label} is of schema version {lake}.{store}, "
        + (
            f"newer than this workbench's ({LAKE_VERSION}.{STORE_VERSION}); upgrade "
            "agent-workbench to read or push to it"
            if newer
            else f"older than this workbench's ({LAKE_VERSION}.{STORE_VERSION}); push with the "
            "workbench that made it, or start a new lake"
        )
    )


def connect(config: LakeConfig, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB with the lake attached."""
    conn = duckdb.connect(
        config={
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            # DuckDB checks an extension's signature on every LOAD, over the whole binary
            # (100 MB for the three): 1-2 s of every `--lake` command. These binaries are
            # the wheels' files, installed from their paths by this code (`load_extensions`)
            # and loaded by name only, never from a URL, so the check guards nothing that
            # whoever can write site-packages could not change anyway.
            "allow_unsigned_extensions": True,
        }
    )
    try:
        conn.execute("SET TimeZone = 'UTC'")
        attach(conn, config, read_only=read_only)
    except BaseException:
        conn.close()
        raise
    return conn


_URI_PASSWORD = re.compile(r"(://[^:/@\s]+:)[^@\s]+@")


def scrubbed(exc: BaseException, config: LakeConfig, secrets: dict[str, str]) -> str:
    """DuckDB's first line about a failure, with the catalog's password and the bucket's
    credentials left out (the postgres extension quotes its connection string)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = text.replace(config.catalog, without_password(config.catalog))
    text = _URI_PASSWORD.sub(r"\1***@", without_password(text))
    for key in ("key_id", "secret", "session_token"):
        if secrets.get(key):
            text = text.replace(secrets[key], "***")
    return text


def _quoted(text: str) -> str:
    return text.replace("'", "''")
