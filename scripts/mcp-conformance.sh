#!/usr/bin/env bash
# Runs the official MCP conformance harness in client mode against `workbench mcp-conformance`.
#   scripts/mcp-conformance.sh                 initialize and tools_call (what CI checks)
#   scripts/mcp-conformance.sh SCENARIO...     the named client scenarios
#   scripts/mcp-conformance.sh --all           every client scenario (auth ones included)
# Results go to .workbench/conformance/; the exit code is non-zero if any scenario failed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-mcp-servers.sh
for candidate in node_modules/node-*/bin; do
    [ -x "$candidate/node" ] && PATH="$PWD/$candidate:$PATH"
done
export PATH
harness=node_modules/.bin/conformance
if [ "${1:-}" = "--all" ]; then
    mapfile -t scenarios < <("$harness" list --client | sed -n 's/^  - \([^ ]*\).*/\1/p')
elif [ "$#" -gt 0 ]; then
    scenarios=("$@")
else
    scenarios=(initialize tools_call)
fi
out=.workbench/conformance
mkdir -p "$out"
failed=()
for scenario in "${scenarios[@]}"; do
    if "$harness" client --command "$PWD/.venv/bin/workbench mcp-conformance" \
        --scenario "$scenario" -o "$out" >"$out/last.log" 2>&1; then
        echo "PASS $scenario"
    else
        echo "FAIL $scenario ($(grep -E '^Passed:' "$out/last.log" || echo 'no summary'))"
        failed+=("$scenario")
    fi
done
[ "${#failed[@]}" -eq 0 ]
