#!/usr/bin/env bash
# Blender for render.blender (issue 7): system libraries, a separate bpy venv, the Docker image.
#
# bpy 5.0.1 needs Python 3.11 exactly and numpy<2, which clash with the trainer's stack
# (pyarrow 26, numpy 2), so it NEVER goes into $VENV: it gets its own venv at
# ~/.cache/verifiers/bpy-venv (the cold peer of benchmarks/render.py). Jobs never use it: the
# `blender` sandbox runtime (sandbox/images/blender/runtime.toml) has bpy in its own root
# filesystem, which `_build` makes and imports as the Docker image (both backends run it).
# Idempotent: a re-run with everything in place only checks (a few seconds: versions, not imports).
set -euo pipefail

BPY_VERSION="5.0.1"
BPY_VENV="$HOME/.cache/verifiers/bpy-venv"
PY="${PY:-python3}"

libs="libx11-6 libxrender1 libxfixes3 libxi6 libxkbcommon0 libsm6 libgl1 libegl1 libegl-mesa0 bubblewrap"
missing=""
for pkg in $libs; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
  echo "30-blender: installing$missing"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi

# venv_ok imports bpy (the proof the venv works, after it is made); venv_present only reads the
# installed versions: the idempotent re-run's probe. Importing ~1 GB of bpy from a cold page
# cache took up to 75 s of CI setup for a venv that only benchmarks/render.py runs (no test and
# no job uses it); the libraries it needs are checked above by dpkg either way.
venv_ok() {
  [ -x "$BPY_VENV/bin/python" ] && "$BPY_VENV/bin/python" - "$BPY_VERSION" <<'PYEOF' >/dev/null 2>&1
import sys
import bpy, numpy
assert bpy.app.version_string == sys.argv[1], bpy.app.version_string
assert int(numpy.__version__.split(".")[0]) < 2
PYEOF
}
venv_present() {
  [ -x "$BPY_VENV/bin/python" ] && "$BPY_VENV/bin/python" - "$BPY_VERSION" <<'PYEOF' >/dev/null 2>&1
import sys
from importlib.metadata import version
from importlib.util import find_spec
assert version("bpy") == sys.argv[1], version("bpy")
assert int(version("numpy").split(".")[0]) < 2
assert find_spec("bpy") is not None and find_spec("numpy") is not None
PYEOF
}

if ! venv_present; then
  py311=""
  for cand in "${VERIFIERS_PYTHON311:-}" python3.11 /usr/bin/python3.11 /usr/local/bin/python3.11 \
              "$HOME"/.pyenv/versions/3.11*/bin/python3.11; do
    [ -n "$cand" ] || continue
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null; then
      py311="$(command -v "$cand")"
      break
    fi
  done
  if [ -z "$py311" ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3.11 python3.11-venv
    py311=/usr/bin/python3.11
  fi
  if ! "$py311" -c 'import ensurepip, venv' 2>/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3.11-venv
  fi
  echo "30-blender: creating $BPY_VENV with $py311 (bpy==$BPY_VERSION)"
  rm -rf "$BPY_VENV"
  mkdir -p "$(dirname "$BPY_VENV")"
  "$py311" -m venv "$BPY_VENV"
  "$BPY_VENV/bin/pip" install -q --disable-pip-version-check "bpy==$BPY_VERSION" "numpy<2"
  venv_ok || { echo "30-blender: bpy venv at $BPY_VENV does not import bpy" >&2; exit 1; }
fi
echo "30-blender: bpy venv ready at $BPY_VENV"

# The Docker image (render tests marked docker need it). Built only where an engine answers;
# the build is skipped when the image's input hash is unchanged.
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  "$PY" -m verifiers.domains.render._build build
else
  echo "30-blender: no Docker engine; skipping the Blender image (docker-marked tests need it)"
fi
