#!/usr/bin/env bash
# Build the wheel, install it into a clean venv (core dependencies only), import every
# verifiers.* subpackage from the installed copy, and run mypy on it: static tools do not follow
# setuptools' editable import hooks, so this is the check that the package-dir mapping ships.
set -euo pipefail
PYTHON_311="$1"
REPO="$PWD"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$PYTHON_311" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --upgrade pip build
"$WORK/venv/bin/python" -m build -q --wheel --outdir "$WORK/dist" "$REPO" >/dev/null
"$WORK/venv/bin/python" -m pip install -q "$WORK"/dist/verifiers-*.whl mypy
cd "$WORK"
"$WORK/venv/bin/python" - <<'PY'
import importlib, pkgutil, sys
import verifiers
assert "site-packages" in verifiers.__file__, verifiers.__file__
heavy = {"torch", "docker", "trimesh", "bpy", "pdfplumber"}
names = ["verifiers"] + [m.name for m in pkgutil.walk_packages(verifiers.__path__, "verifiers.")
                         if m.ispkg]
for name in names:
    importlib.import_module(name)
loaded = heavy & set(sys.modules)
assert not loaded, f"heavy modules imported by plain subpackage imports: {loaded}"
from importlib.resources import files
assert files("verifiers._data").joinpath("examples/quickstart.jsonl").is_file()
print(f"imported {len(names)} packages from the wheel: {', '.join(names)}")
PY
"$WORK/venv/bin/mypy" --config-file "$REPO/pyproject.toml" --no-incremental -p verifiers
