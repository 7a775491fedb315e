#!/usr/bin/env bash
# Installs everything the tests need from the project's own files, then runs the checks and
# the tests, each phase with its time. Extra arguments go to pytest (e.g.
# `bash scripts/test.sh tests/store -x`); pytest runs on every core (pytest-xdist's
# `-n auto`; `-n 0` among the arguments runs it in one process).
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib.sh

began=$SECONDS
timed() {  # timed "PHASE" CMD...: the phase's heading, then its time when it ends
    local started=$SECONDS
    echo "== $1"
    shift
    "$@"
    echo "== $((SECONDS - started)) s"
}

install() {
    install_venv "[dev,frameworks,otel,otel-producers,web]"
    bash scripts/install-mcp-servers.sh
    bash scripts/install-browser.sh
}

checks() {
    echo "-- ruff"
    .venv/bin/ruff check .
    .venv/bin/ruff format --check .
    # mypy keeps its cache in .mypy_cache: a second run checks only what changed.
    echo "-- mypy (strict for the product; under a minute without a cache on two quiet cores)"
    .venv/bin/mypy
}

timed "installing (.venv: the project with its dev, frameworks, otel, otel-producers and web extras; the reference MCP servers; Chromium)" install
timed "ruff, mypy" checks
timed "pytest (on every core)" .venv/bin/python -m pytest -q -n auto "$@"

# The lake (tests/lake: a private PostgreSQL cluster, moto's S3, the DuckLake extension
# wheels) on the DuckDB its extensions pin, which is also the oldest DuckDB the project
# declares: the store's own tests run on it too. Skipped when pytest was given arguments (a
# selection of the suite above).
lake() {
    bash scripts/install-lake-services.sh
    .venv-lake/bin/python -m pytest -q -n 2 tests/lake tests/store
}
if [ "$#" -eq 0 ]; then
    timed "the lake and the store on the lake extra's DuckDB (.venv-lake: PostgreSQL, moto, DuckLake)" lake
fi
echo "== all done in $((SECONDS - began)) s"
