#!/usr/bin/env bash
# Pre-build DeepSpeed's CPU shared-memory comm op (a torch JIT extension) so the 2-rank DeepSpeed
# adapter test (tests/rl_adapters/test_rl_deepspeed.py) does not spend ~90 s compiling it inside
# the test. Needs g++/ninja; without a compiler DeepSpeed falls back to plain gloo and the test
# still runs.
#
# Where: $TORCH_EXTENSIONS_DIR, which .ci/run sets inside the CI venv (the test reads the same),
# so a CI run never rebuilds the build another venv on this machine uses.
# Cached by input hash: the compiles go through ccache ($CCACHE_DIR, default
# ~/.cache/verifiers/ccache; keep it between CI runs like the runtime cache), whose key is the
# content of every input (DeepSpeed's sources, torch's and Python's headers, the compiler, the
# flags). CCACHE_BASEDIR is the venv, so a new venv at another path (each clean clone) hits the
# same entries. Measured on the shared 2-core machine at load 9-14: a miss 288 s wall (66 CPU-s),
# a hit from a venv at another path 5.7 s (2.5 CPU-s).
set -euo pipefail
PY="${PY:-python}"
VENV="${VENV:-$(cd "$(dirname "$PY")/.." && pwd)}"
if ! command -v g++ >/dev/null 2>&1; then
    apt-get install -y --no-install-recommends g++ >/dev/null 2>&1 || true
fi
if ! command -v ccache >/dev/null 2>&1; then
    apt-get install -y --no-install-recommends ccache >/dev/null 2>&1 || true
fi
if [ -x /usr/lib/ccache/c++ ]; then
    # torch's JIT compiles with `c++` from PATH: Debian's ccache links come first.
    export PATH="/usr/lib/ccache:$PATH"
    export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/verifiers/ccache}"
    export CCACHE_BASEDIR="$VENV"
    echo "60-deepspeed-ops: compiling through ccache ($CCACHE_DIR, base $CCACHE_BASEDIR)"
else
    echo "60-deepspeed-ops: no ccache: the op compiles from scratch"
fi
# torch's JIT build takes a file baton (a `lock` file) and waits forever while it exists; a
# build killed midway (an interrupted test run) leaves it behind and every later build, this
# script and the DeepSpeed test included, then hangs. A build takes ~90 s: a baton older than
# 10 minutes is stale.
ext_dir="${TORCH_EXTENSIONS_DIR:-$HOME/.cache/torch_extensions}"
if [ -d "$ext_dir" ]; then
    find "$ext_dir" -maxdepth 3 -name lock -path '*deepspeed_shm_comm*' -mmin +10 -print -delete \
        | sed 's/^/60-deepspeed-ops: removed a stale build lock: /'
fi
started=$(date +%s)
DS_ACCELERATOR=cpu "$PY" - <<'PYEOF' || echo "deepspeed shm op prebuild skipped (DeepSpeed will use gloo only)"
from deepspeed.comm.torch import build_shm_op
print("deepspeed shm op:", "built" if build_shm_op() is not None else "not compatible here")
PYEOF
echo "60-deepspeed-ops: $(( $(date +%s) - started )) s (into $ext_dir)"
