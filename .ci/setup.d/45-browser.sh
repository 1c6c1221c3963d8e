#!/usr/bin/env bash
# Headless Chromium for the HTML report's browser tests (tests/core/test_report_html.py,
# marker `browser`): they render the page, take a screenshot and read the DOM after the page's
# own script ran. Idempotent: with chromium installed this takes well under a second; a fresh
# Debian bookworm machine needs ~1-2 minutes (apt-get, ~100 MB of packages, once).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && chromium --headless --no-sandbox --version >/dev/null 2>&1; then
    echo "chromium: $(chromium --version 2>/dev/null)"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "chromium: $(chromium --version 2>/dev/null)"
