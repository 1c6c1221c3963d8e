#!/usr/bin/env bash
# OpenEnv's own client for tests/episodes/test_openenv.py (the scripted agent drives the
# /openenv routes of `verifiers serve` with openenv-core's GenericEnvClient over its WebSocket).
# openenv-core goes in with --no-deps: its declared dependencies pull gradio (and a newer
# pillow) that neither its client nor this project needs; the client imports fastmcp and
# websockets, installed with their own dependencies. Idempotent: a venv that already imports
# the client returns in about a second; a fresh machine needs ~20 s (PyPI).
set -euo pipefail
PY="${PY:-python}"
if "$PY" -c "import openenv.core.generic_client, websockets" >/dev/null 2>&1; then
    echo "70-episodes: openenv client present"
    exit 0
fi
"$PY" -m pip install -q --no-deps "openenv-core==0.3.0"
"$PY" -m pip install -q "websockets>=12" "fastmcp>=3"
"$PY" -c "import openenv.core.generic_client" && echo "70-episodes: openenv client installed"
