"""From the repository root, the CLI and the Python API work as from anywhere else.

Regression for issue 13 item 6. With a wheel install (not editable), the repository root holds a
``verifiers/`` folder without ``domains``; worker processes (``python -m``) and a REPL at the
root (``''`` first on ``sys.path``) imported it and every domain verifier errored with "No
module named 'verifiers.domains'".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MESH = "datasets/examples/mesh.jsonl"
# The base interpreter, not this venv's: an editable install's import hook would mask the bug.
PYTHON = str(Path(sys.base_prefix) / "bin" / "python3")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project installed from its wheel into a folder (deps from the running venv)."""
    site = tmp_path_factory.mktemp("wheel") / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
        + ["--target", str(site), str(REPO)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    assert (site / "verifiers" / "domains" / "mesh").is_dir()
    return site


def _env(site: Path, tmp: Path) -> dict[str, str]:
    # The running venv's packages as plain path entries: their .pth files (the editable
    # install's import hook among them) are not processed, so only the wheel provides verifiers.
    deps = [p for p in sys.path if p.endswith("-packages")]
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH"), *deps]))
    return {**os.environ, "PYTHONPATH": path, "VERIFIERS_CACHE_DIR": str(tmp)}


def _run_at_root(argv: list[str], site: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    """``argv`` run at the repository root with only the wheel providing verifiers."""
    return subprocess.run(
        argv, cwd=REPO, env=_env(site, tmp), capture_output=True, text=True, timeout=300
    )


def _statuses(lines: list[str]) -> Counter[str]:
    return Counter(json.loads(line)["status"] for line in lines if line.strip())


def test_cli_score_from_the_repository_root(wheel_site: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    script = [PYTHON, "-c", "import sys; from verifiers.cli import run; sys.exit(run())"]
    # -c puts '' first like a REPL would, so drop it: the console script has its bin dir there.
    script[2] = "import sys; sys.path.pop(0); from verifiers.cli import run; sys.exit(run())"
    score = [*script, "score", MESH, "--no-cache", "--sandbox", "none", "-q", "-o", str(out)]
    proc = _run_at_root(score, wheel_site, tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = out.read_text().splitlines()
    assert "verifiers.domains" not in out.read_text()
    assert _statuses(rows) == Counter({"fail": 3, "pass": 2})


def test_python_api_in_a_repl_at_the_repository_root(wheel_site: Path, tmp_path: Path) -> None:
    code = (
        "import json, verifiers\n"
        f"rows = [json.loads(l) for l in open({MESH!r})]\n"
        "for r in verifiers.score(rows, base_dir='datasets/examples', sandbox='none',"
        " cache=False):\n"
        "    print(r.model_dump_json())\n"
    )
    proc = _run_at_root([PYTHON, "-c", code], wheel_site, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "verifiers.domains" not in proc.stdout
    assert _statuses(proc.stdout.splitlines()) == Counter({"fail": 3, "pass": 2})
