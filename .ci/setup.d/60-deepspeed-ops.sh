#!/usr/bin/env bash
# Pre-build DeepSpeed's CPU shared-memory comm op (JIT, cached under ~/.cache/torch_extensions)
# so the 2-rank DeepSpeed adapter test (tests/rl_adapters/test_rl_deepspeed.py) does not spend
# ~90 s compiling it inside the test. Idempotent: a cached build is reused. Needs g++/ninja;
# without a compiler DeepSpeed falls back to plain gloo and the test still runs.
set -euo pipefail
PY="${PY:-python}"
if ! command -v g++ >/dev/null 2>&1; then
    apt-get install -y --no-install-recommends g++ >/dev/null 2>&1 || true
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
DS_ACCELERATOR=cpu "$PY" - <<'PYEOF' || echo "deepspeed shm op prebuild skipped (DeepSpeed will use gloo only)"
from deepspeed.comm.torch import build_shm_op
print("deepspeed shm op:", "built" if build_shm_op() is not None else "not compatible here")
PYEOF
