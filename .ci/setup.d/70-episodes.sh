#!/usr/bin/env bash
# OpenEnv's own client for tests/episodes/test_openenv.py (the scripted agent drives the
# /openenv routes of `verifiers serve` with openenv-core's GenericEnvClient over its WebSocket).
#
# Exact versions, installed in this order, on purpose:
#   1. openenv-core 0.3.0 with --no-deps: its declared dependencies pull gradio (and a newer
#      pillow) that neither its client nor this project needs;
#   2. what its client imports, pinned: fastmcp 4.2.3 (with fastmcp-slim 4.2.3, mcp 2.3.0,
#      mcp-types 2.3.0) and websockets 17.4, plus sse-starlette 3.7.0 (see below).
#
# Why not one resolve: openreward 0.1.167 (the dev extra, installed before this script by
# .ci/run) pins sse-starlette==2.3.6, while fastmcp 4.2.3 needs mcp>=2.3.0, which needs
# sse-starlette>=3.0.0. So `pip install openreward==0.1.167 fastmcp==4.2.3` is
# ResolutionImpossible, while installing them one after the other "works": pip resolves only
# the requirements it is asked for, upgrades sse-starlette for mcp, and merely warns that
# openreward's pin is now broken. That one break is known and accepted: openreward's server
# imports only `sse_starlette.EventSourceResponse`, which 3.x keeps, and tests/episodes/
# test_ors.py runs openreward's real client and server on sse-starlette 3.7.0. This script
# pins sse-starlette so the outcome does not depend on the day's PyPI, then fails on any other
# broken requirement among these packages (`pip check`, filtered to them).
#
# Idempotent: a venv that already has these exact versions returns in about a second; a fresh
# machine needs ~20 s (PyPI).
set -euo pipefail
PY="${PY:-python}"
PINS=(
    "openenv-core==0.3.0"
    "fastmcp==4.2.3"
    "fastmcp-slim==4.2.3"
    "mcp==2.3.0"
    "mcp-types==2.3.0"
    "websockets==17.4"
    "sse-starlette==3.7.0"
)
have_pins() {
    "$PY" - "${PINS[@]}" <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, version

for pin in sys.argv[1:]:
    name, want = pin.split("==")
    try:
        if version(name) != want:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
import openenv.core.generic_client  # noqa: E402,F401  (the client the tests drive)
import websockets  # noqa: E402,F401
EOF
}
if have_pins >/dev/null 2>&1; then
    echo "70-episodes: openenv client present (pinned versions)"
    exit 0
fi
"$PY" -m pip install -q --no-deps "${PINS[0]}"
# pip prints its "dependency resolver does not currently take into account" warning here
# for openreward's sse-starlette pin (explained above); the check below decides.
"$PY" -m pip install -q "${PINS[@]:1}" 2>&1 | grep -v -e "openreward 0.1.167 requires sse-starlette==2.3.6" \
    -e "pip's dependency resolver does not currently take into account" >&2 || true
have_pins || { echo "70-episodes: pinned versions not installed" >&2; exit 1; }
# Any broken requirement among these packages other than the one accepted above fails setup.
broken=$("$PY" -m pip check 2>&1 | grep -i -E "^(openenv-core|fastmcp|fastmcp-slim|mcp|mcp-types|websockets|sse-starlette|openreward) " \
    | grep -v -E "^openenv-core 0\.3\.0 requires (gradio|tomli|tomli-w|huggingface[-_]hub|typer|rich|requests|openai)[ ,>=<]" \
    | grep -v -F "openreward 0.1.167 has requirement sse-starlette==2.3.6, but you have sse-starlette 3.7.0." || true)
if [ -n "$broken" ]; then
    echo "70-episodes: broken requirements: $broken" >&2
    exit 1
fi
echo "70-episodes: openenv client installed (openreward's sse-starlette==2.3.6 pin knowingly overridden)"
