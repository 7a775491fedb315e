"""The real components a lake stands on, started for the tests: a private PostgreSQL cluster
(Debian's `postgresql` package: initdb and pg_ctl, as the `postgres` user when the tests run
as root, trust auth on a loopback port) and moto's S3 server on loopback. Each says why it
cannot start, for the tests' skip reason."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

# A role that must give its password (the tests' wrong-credentials case); every other
# connection is trusted.
PASSWORD_ROLE = "wb_password_role"
PASSWORD = "right-password"


class Unavailable(Exception):
    """A component that cannot be started here: the reason to skip."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pg_bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not candidates:
        raise Unavailable(
            f"PostgreSQL's {name} is not installed (scripts/install-lake-services.sh installs it)"
        )
    return candidates[-1]


@dataclass
class Postgres:
    port: int
    folder: Path

    def uri(self, database: str, user: str = "postgres", password: str | None = None) -> str:
        secret = f":{password}" if password else ""
        return f"postgresql://{user}{secret}@127.0.0.1:{self.port}/{database}"

    def psql(self, sql: str, database: str = "postgres") -> None:
        subprocess.run(
            [_pg_bin("psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
             "-d", database, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql],
            check=True, capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    def new_database(self) -> str:
        name = f"lake_{uuid.uuid4().hex[:12]}"
        self.psql(f"CREATE DATABASE {name}")
        return name


def _as_postgres(argv: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run it as the `postgres` user then."""
    if os.geteuid() != 0:
        return argv
    runuser = shutil.which("runuser")
    if runuser is None:
        raise Unavailable("running as root without runuser: cannot start PostgreSQL")
    return [runuser, "-u", "postgres", "--", *argv]


@contextmanager
def postgres_cluster() -> Iterator[Postgres]:
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    folder = Path(tempfile.mkdtemp(prefix="wb-lake-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    data, port = folder / "data", free_port()
    try:
        subprocess.run(
            _as_postgres([initdb, "-D", str(data), "-A", "trust", "-U", "postgres"]),
            check=True, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        hba = data / "pg_hba.conf"
        # The password role first: its connections must give the password.
        hba.write_text(f"host all {PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c max_connections=200"
        subprocess.run(
            _as_postgres([pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "log"),
                          "-w", "-t", "120", "start"]),
            check=True, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise Unavailable(f"PostgreSQL did not start: {(exc.stderr or exc.stdout)[-300:]}") from exc
    server = Postgres(port, folder)
    try:
        server.psql(f"CREATE ROLE {PASSWORD_ROLE} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
        yield server
    finally:
        subprocess.run(
            _as_postgres([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]),
            capture_output=True, timeout=60,
        )  # fmt: skip
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class S3:
    endpoint: str  # http://127.0.0.1:PORT

    def env(self) -> dict[str, str]:
        """The environment a workbench finds the bucket's endpoint and credentials in."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "wb-test-key",
            "AWS_SECRET_ACCESS_KEY": "wb-test-secret-do-not-show",
            "AWS_REGION": "us-east-1",
        }

    def new_bucket(self) -> str:
        import boto3

        name = f"lake-{uuid.uuid4().hex[:12]}"
        boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="wb-test-key",
            aws_secret_access_key="wb-test-secret-do-not-show",
            region_name="us-east-1",
        ).create_bucket(Bucket=name)
        return name


@contextmanager
def s3_server() -> Iterator[S3]:
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        raise Unavailable("moto[server] is not installed (the `lake` extra)") from None
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield S3(f"http://127.0.0.1:{port}")
    finally:
        server.stop()
