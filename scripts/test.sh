#!/usr/bin/env bash
# Installs everything the tests need from the project's own files, then runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e ".[dev]"
# Real MCP servers the tests start as subprocesses (see tests/mcp/).
bash scripts/install-mcp-servers.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/python -m pytest -q "$@"
