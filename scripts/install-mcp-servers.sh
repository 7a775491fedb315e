#!/usr/bin/env bash
# Installs the reference MCP servers used by the tests into the project folder:
# mcp-server-time from PyPI (into .venv) and @modelcontextprotocol/server-everything from npm
# (into node_modules). Safe to run again; does nothing when they are present.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/mcp-server-time ]; then
    .venv/bin/python -m pip install -q "mcp-server-time>=2025.0"
fi
if command -v npm >/dev/null 2>&1 && [ ! -d node_modules/@modelcontextprotocol/server-everything ]; then
    npm install --no-audit --no-fund --silent --no-save @modelcontextprotocol/server-everything >/dev/null
fi
