#!/usr/bin/env bash
# Installs the browser the `browser` tests drive (tests/support/browser.py): Debian's
# Chromium, /usr/bin/chromium, with apt-get. Playwright (the web extra) drives it; its own
# browser downloads are never used. Safe to run again; does nothing when it is there, and
# only says so where apt-get cannot install it (not root, not Debian): those tests then skip.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

if [ -x /usr/bin/chromium ]; then
    echo "-- chromium is installed (/usr/bin/chromium); not installing"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
    echo "install-browser: cannot apt-get install chromium here (needs root on Debian); the browser tests will be skipped" >&2
    exit 0
fi
step "installing chromium from Debian's packages (apt-get; about 300 MB)" \
    sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium'
