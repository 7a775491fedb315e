#!/usr/bin/env bash
# Installs everything the tests need from the project's own files, then runs the checks and
# the tests. Extra arguments go to pytest (e.g. `bash scripts/test.sh tests/store -x`).
set -euo pipefail
cd "$(dirname "$0")/.."

quietly() {  # run a step; show its output only when it fails
    local log
    log="$(mktemp)"
    if ! "$@" >"$log" 2>&1; then
        cat "$log" >&2
        echo "setup step failed: $*" >&2
        return 1
    fi
    rm -f "$log"
}

echo "== installing (.venv, project with dev extras, reference MCP servers)"
[ -x .venv/bin/python ] || python3 -m venv .venv
quietly .venv/bin/python -m pip install --upgrade pip
quietly .venv/bin/python -m pip install -e ".[dev]"
quietly bash scripts/install-mcp-servers.sh

echo "== ruff, mypy"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy

echo "== pytest"
.venv/bin/python -m pytest -q "$@"
