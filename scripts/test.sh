#!/usr/bin/env bash
# Installs everything the tests need from the project's own files, then runs the checks and
# the tests. Extra arguments go to pytest (e.g. `bash scripts/test.sh tests/store -x`).
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib.sh

echo "== installing (.venv: the project with its dev, frameworks, otel and otel-producers extras; the reference MCP servers)"
install_venv "[dev,frameworks,otel,otel-producers]"
bash scripts/install-mcp-servers.sh

echo "== ruff, mypy"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy

echo "== pytest"
.venv/bin/python -m pytest -q "$@"
