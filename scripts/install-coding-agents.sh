#!/usr/bin/env bash
# Opt-in: installs the coding-agent CLIs that the `coding_agents` tests drive, into the
# project folder only (node_modules/.coding-agents/), never globally:
#   - Claude Code (@anthropic-ai/claude-code), the `claude` command;
#   - Codex CLI (@openai/codex), the `codex` command.
# Both ship their program as a platform package from npm. A folder of its own, because an
# `npm install` without package.json drops what it was not told to install (see
# install-mcp-servers.sh), and npm leaves a dot-folder in node_modules alone.
# Versions: `latest` unless CLAUDE_CODE_VERSION / CODEX_VERSION say otherwise. Safe to run
# again: it reinstalls only when a CLI is missing.
# Then: `.venv/bin/python -m pytest -m coding_agents tests/interop/test_coding_agents.py`.
set -euo pipefail
cd "$(dirname "$0")/.."

CLAUDE_CODE_VERSION="${CLAUDE_CODE_VERSION:-latest}"
CODEX_VERSION="${CODEX_VERSION:-latest}"
prefix="node_modules/.coding-agents"

if ! command -v npm >/dev/null 2>&1; then
    echo "install-coding-agents: npm not found; the coding-agent tests will be skipped" >&2
    exit 1
fi
if [ -x "$prefix/node_modules/.bin/claude" ] && [ -x "$prefix/node_modules/.bin/codex" ] \
    && [ -z "${REINSTALL:-}" ]; then
    exit 0
fi
mkdir -p "$prefix"
npm install --prefix "$prefix" --no-audit --no-fund --no-save --silent \
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION" >/dev/null
"$prefix/node_modules/.bin/claude" --version
"$prefix/node_modules/.bin/codex" --version
