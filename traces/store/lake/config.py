"""Which lake: `<home>/lake.toml` or a `--lake` URL, read into a `LakeConfig`.

    # <home>/lake.toml
    catalog = "postgresql://workbench@db.internal:5432/lake"   # or a .ducklake/.sqlite file
    data = "s3://team-traces/workbench/"                        # or a folder
    [s3]                     # optional: else AWS_ENDPOINT_URL, AWS_REGION, ... (see `s3_options`)
    endpoint = "http://minio.internal:9000"
    region = "eu-west-1"

A `--lake` URL is the catalog with the data path as its `data` parameter
(`postgresql://workbench@db/lake?data=s3://team-traces/workbench/`), or the path of a
lake.toml. Credentials never sit in either: PostgreSQL's come from libpq (PGPASSWORD,
~/.pgpass), the bucket's from the environment or the AWS config, and `label` (what logs,
errors and `lake status` show) leaves out any password a catalog was given anyway.
"""

from __future__ import annotations

import configparser
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from traces.store.opening import StoreError

LAKE_FILE = "lake.toml"


class LakeError(StoreError):
    """A lake that cannot be used, as one line saying what to do."""


@dataclass(frozen=True)
class LakeConfig:
    catalog: str  # a PostgreSQL URI or key=value string, or the path of a catalog file
    data: str  # s3://bucket/prefix/ or a folder
    s3: dict[str, str] = field(default_factory=dict)

    @property
    def on_postgres(self) -> bool:
        return self.catalog.startswith(("postgres://", "postgresql://")) or "dbname=" in (
            self.catalog
        )

    @property
    def on_s3(self) -> bool:
        return self.data.startswith("s3://")

    def attach_target(self) -> str:
        """What DuckDB's ATTACH takes: `ducklake:<metadata>`."""
        if self.on_postgres:
            return f"ducklake:postgres:{self.catalog}"
        if self.catalog.endswith((".sqlite", ".db")):
            return f"ducklake:sqlite:{self.catalog}"
        return f"ducklake:{self.catalog}"

    @property
    def label(self) -> str:
        """The lake as users may see it: catalog and data path, no password."""
        return f"{without_password(self.catalog)} (data {self.data})"


_KEYWORD_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def without_password(catalog: str) -> str:
    """The catalog with any password left out (a URI's `user:secret@`, `password=`)."""
    text = _KEYWORD_PASSWORD.sub(r"\1***", catalog)
    if "://" not in text:
        return text
    parts = urlsplit(text)
    netloc = parts.netloc
    if "@" in netloc:
        user, host = netloc.rsplit("@", 1)
        netloc = f"{user.split(':', 1)[0]}:***@{host}" if ":" in user else netloc
    query = urlencode(
        [(k, "***" if k.lower() == "password" else v) for k, v in parse_qsl(parts.query)]
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def from_url(url: str, base: Path | None = None) -> LakeConfig:
    """A `--lake` value: a lake.toml path, or a catalog with `?data=` (see the module)."""
    if url.endswith(".toml"):
        return from_file(Path(url))
    catalog, _, query = url.partition("?")
    params = parse_qsl(query, keep_blank_values=True)
    data = [value for key, value in params if key == "data"]
    if not data or not data[0]:
        raise LakeError(
            f"--lake {without_password(url)} names no data path; add ?data=s3://BUCKET/PREFIX "
            "(or ?data=FOLDER), or give the path of a lake.toml"
        )
    rest = urlencode([(key, value) for key, value in params if key != "data"])
    return _checked(catalog + (f"?{rest}" if rest else ""), data[0], {}, base)


def from_file(path: Path) -> LakeConfig:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LakeError(
            f"no lake configured: {path} does not exist; write one (docs/team.md) or give "
            "--lake URL"
        ) from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LakeError(f"cannot read {path}: {exc}") from None
    catalog, data_path, s3 = data.get("catalog"), data.get("data"), data.get("s3", {})
    if not isinstance(catalog, str) or not isinstance(data_path, str) or not catalog:
        raise LakeError(f'{path} needs `catalog = "..."` and `data = "..."` (docs/team.md)')
    if not isinstance(s3, dict) or not all(isinstance(v, str | bool) for v in s3.values()):
        raise LakeError(f"{path}: [s3] holds text and true/false values only")
    if any(key in s3 for key in ("key_id", "secret", "session_token")):
        raise LakeError(
            f"{path} holds bucket credentials; keep them in the environment or the AWS "
            "config (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) instead"
        )
    return _checked(
        catalog,
        data_path,
        {k: str(v).lower() if isinstance(v, bool) else v for k, v in s3.items()},
        path.parent,
    )


def for_home(home: Path, url: str | None) -> LakeConfig:
    """The lake `--lake URL` names, else the home's lake.toml."""
    return from_url(url, home) if url else from_file(home / LAKE_FILE)


def _checked(catalog: str, data: str, s3: dict[str, str], base: Path | None) -> LakeConfig:
    def local(path: str) -> str:
        resolved = Path(path).expanduser()
        return str(resolved if resolved.is_absolute() or base is None else base / resolved)

    if "://" not in catalog and "dbname=" not in catalog:
        catalog = local(catalog)
    if "://" in data and not data.startswith("s3://"):
        raise LakeError(f"lake data path {data}: only s3://BUCKET/PREFIX or a folder")
    if not data.startswith("s3://"):
        data = local(data)
    return LakeConfig(catalog=catalog, data=data.rstrip("/") + "/", s3=s3)


def s3_options(config: LakeConfig, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The S3 secret's options: lake.toml's [s3], then the environment (AWS_ENDPOINT_URL_S3
    or AWS_ENDPOINT_URL, AWS_REGION or AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), then the AWS config files for the profile
    (AWS_PROFILE, else default)."""
    env = os.environ if environ is None else environ
    found: dict[str, str] = {}
    profile = _aws_profile(env)

    def setting(own: str | None, names: tuple[str, ...], in_profile: str) -> str | None:
        """lake.toml's value, else the first of these variables, else the profile's."""
        return own or next((env[n] for n in names if env.get(n)), None) or profile.get(in_profile)

    key = setting(None, ("AWS_ACCESS_KEY_ID",), "aws_access_key_id")
    secret = setting(None, ("AWS_SECRET_ACCESS_KEY",), "aws_secret_access_key")
    token = setting(None, ("AWS_SESSION_TOKEN",), "aws_session_token")
    if key and secret:
        found |= {"key_id": key, "secret": secret}
    if token:
        found["session_token"] = token
    region = setting(config.s3.get("region"), ("AWS_REGION", "AWS_DEFAULT_REGION"), "region")
    found["region"] = region or "us-east-1"
    names = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
    endpoint = setting(config.s3.get("endpoint"), names, "endpoint_url")
    if endpoint:
        # Another store than AWS's (MinIO, moto, R2): its address, path-style URLs.
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        found["endpoint"] = parts.netloc
        found["use_ssl"] = config.s3.get("use_ssl", str(parts.scheme == "https").lower())
        found["url_style"] = config.s3.get("url_style", "path")
    elif "url_style" in config.s3:
        found["url_style"] = config.s3["url_style"]
    return found


def _aws_profile(env: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The profile's keys from ~/.aws/credentials and ~/.aws/config (credentials first)."""
    name = env.get("AWS_PROFILE") or "default"
    home = Path(env.get("HOME") or Path.home())
    files = [
        (Path(env.get("AWS_SHARED_CREDENTIALS_FILE") or home / ".aws/credentials"), name),
        (
            Path(env.get("AWS_CONFIG_FILE") or home / ".aws/config"),
            name if name == "default" else f"profile {name}",
        ),
    ]
    values: dict[str, str] = {}
    for path, section in files:
        parser = configparser.ConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error):
            continue
        if parser.has_section(section):
            for key, value in parser.items(section):
                values.setdefault(key, value)
    return values
