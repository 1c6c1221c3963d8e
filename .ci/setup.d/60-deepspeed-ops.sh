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
DS_ACCELERATOR=cpu "$PY" - <<'PYEOF' || echo "deepspeed shm op prebuild skipped (DeepSpeed will use gloo only)"
from deepspeed.comm.torch import build_shm_op
print("deepspeed shm op:", "built" if build_shm_op() is not None else "not compatible here")
PYEOF
