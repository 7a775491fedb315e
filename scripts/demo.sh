#!/usr/bin/env bash
# The README's first command: install into .venv and run the offline demo.
# The demo's model is SCRIPTED (pre-written answers bundled with the package): it needs no
# network and no API key. Extra arguments go to `workbench demo` (e.g. --no-tui).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

echo "== installing into .venv"
install_venv ""
echo "== recording the demo's runs"
exec .venv/bin/workbench demo "$@"
