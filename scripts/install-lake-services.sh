#!/usr/bin/env bash
# Installs what the lake tests (tests/lake, marked `lake`) need, from the project's own files:
#   - PostgreSQL from Debian's `postgresql` package (its initdb and pg_ctl; the tests start a
#     private cluster of their own on a loopback port, never the system's), when no initdb
#     is found; needs root (CI runs as root), else the lake tests skip, saying why;
#   - .venv-lake: a second environment with the project and its dev and lake extras — DuckDB
#     pinned to the release the DuckLake, httpfs and postgres extension wheels are built
#     for, and moto's S3 server. The main .venv keeps the newest DuckDB.
# Safe to run again; does nothing when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

have_initdb() {
    command -v initdb >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}

if ! have_initdb; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        step "installing PostgreSQL (Debian's postgresql package) with apt-get" \
            sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql'
    else
        echo "install-lake-services: no initdb, and apt-get needs root; the lake tests will be skipped" >&2
    fi
fi

install_venv "[dev,lake]" .venv-lake
