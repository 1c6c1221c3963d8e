#!/usr/bin/env bash
# Game engines and CAD (issue 18): the godot, cadquery and build123d sandbox runtimes.
#
# Runs as root from the repository root with $PY = the CI venv's python, after 10-sandbox.sh
# (Docker engine, bubblewrap, debootstrap, the Debian base). Each runtime is defined by
# sandbox/images/<name>/runtime.toml and cached by its input hash under
# $VERIFIERS_SANDBOX_CACHE (default /var/cache/verifiers-sandbox): a re-run with everything
# in place only checks (a few seconds). A fresh machine needs about 5 minutes here (godot:
# apt godot3-server, ~1 min; cadquery: 44 pinned wheels incl. OCP 7.9 and VTK, ~2 min;
# build123d: 59 pinned wheels incl. OCP 8.0 novtk, ~2 min; plus the docker imports). The
# three are separate runtimes: CadQuery 2.8 and build123d 0.13 need different OCP builds.
set -euo pipefail

PY="${PY:-python3}"

for name in godot cadquery build123d; do
  "$PY" -m verifiers.sandbox.cli build "$name"
done
