#!/usr/bin/env bash
# Build the wheel; type-check the package as installed (mypy --strict, with every extra
# available from the CI venv); install the wheel into a clean venv with core dependencies only
# and import every verifiers.* subpackage there. Static tools do not follow setuptools'
# editable import hooks (domains/, sandbox/, rl_adapters/ are mapped into verifiers.*), so the
# installed layout is the one that can be checked.
# Usage: .ci/check_wheel.sh PYTHON_311 CI_VENV_DIR
set -euo pipefail
PYTHON_311="$1"
CI_VENV="$2"
REPO="$PWD"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

"$CI_VENV/bin/python" -m build -q --wheel --outdir "$WORK/dist" "$REPO" >/dev/null
WHEEL="$(ls "$WORK"/dist/verifiers-*.whl)"

echo "--- mypy --strict on the installed layout"
mkdir -p "$WORK/site"
"$CI_VENV/bin/python" -m zipfile -e "$WHEEL" "$WORK/site"
# mypy's own incremental cache, kept between runs of this machine: most of a cold run (~60 s of
# CPU here) is the dependencies' stubs and sources (torch, pydantic, ...), which do not change
# between runs. mypy re-checks every module whose source (by hash), options or mypy version
# changed, and what depends on it; VERIFIERS_CI_MYPY_CACHE="" runs it cold.
MYPY_CACHE="${VERIFIERS_CI_MYPY_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/verifiers/ci-mypy}"
if [ -n "$MYPY_CACHE" ]; then
  mkdir -p "$MYPY_CACHE"
  MYPY_FLAGS=(--cache-dir "$MYPY_CACHE")
else
  MYPY_FLAGS=(--no-incremental --cache-dir "$WORK/mypy-cache")
fi
(cd "$WORK/site" && "$CI_VENV/bin/mypy" --config-file "$REPO/pyproject.toml" "${MYPY_FLAGS[@]}" \
  -p verifiers)

echo "--- clean venv, core dependencies only"
"$PYTHON_311" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q "$WHEEL"
cd "$WORK"
"$WORK/venv/bin/python" - <<'PY'
import importlib, pkgutil, sys, time
t0 = time.perf_counter()
import verifiers
print(f"import verifiers: {1000 * (time.perf_counter() - t0):.1f} ms")
assert "site-packages" in verifiers.__file__, verifiers.__file__
heavy = {"torch", "docker", "trimesh", "bpy", "pdfplumber", "trl", "deepspeed"}
names = ["verifiers"] + [m.name for m in pkgutil.walk_packages(verifiers.__path__, "verifiers.")
                         if m.ispkg and not m.name.startswith("verifiers._data")]
for name in names:
    importlib.import_module(name)
loaded = heavy & set(sys.modules)
assert not loaded, f"heavy modules imported by plain subpackage imports: {loaded}"
from verifiers.data import data_path
assert data_path("examples", "quickstart.jsonl").is_file()
results = verifiers.score(list(__import__("verifiers.data").data.iter_jsonl("answers", "numeric.jsonl"))[:5])
assert all(r.status in ("pass", "fail") for r in results), results
print(f"imported {len(names)} packages from the wheel: {', '.join(names)}")
PY
"$WORK/venv/bin/verifiers" score "$("$WORK/venv/bin/python" -c 'from verifiers.data import data_path; print(data_path("examples","quickstart.jsonl"))')" -o "$WORK/scored.jsonl" -q --no-cache
test "$(wc -l < "$WORK/scored.jsonl")" -gt 0
