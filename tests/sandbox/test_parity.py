"""Acceptance for issue 13: the same trajectory gets the same reward on every backend.

Every file under ``datasets/`` whose tasks run model code in the sandbox is scored twice by the
``verifiers`` CLI, ``--sandbox docker`` and ``--sandbox local``, from the repository root, with
the project installed from its wheel into a folder under ``/tmp`` (not editable: the layout
that used to hide the host's packages from bubblewrap jobs and shadow ``verifiers.domains``).
Status and reward must match line by line, and no line may be an ``infra`` error (two broken
backends would otherwise agree).

render.blender runs through ``ctx.sandbox("blender")`` on the ``blender`` runtime (bpy in its
own root filesystem), so its scene files are in the list too.

Corpora whose own tests already score every row on both backends against its expected verdict
(a stronger check than agreement) are not scored a third and fourth time here:
``datasets/code/languages/`` (tests/domains/code/test_code_languages.py),
``datasets/code/adversarial.jsonl`` (tests/domains/code/test_code_adversarial.py: every attack
exactly ``fail`` 0.0 and every control ``pass`` 1.0, on bubblewrap and on Docker), and the game.godot,
cad.script and code.workspace corpora (their verifiers are not in ``SANDBOXED``; their own
corpus tests run on docker and local).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SANDBOXED = {"code.tests", "mesh.constraints", "render.blender"}
PYTHON = str(Path(sys.base_prefix) / "bin" / "python3")
BOTH_BACKENDS_ELSEWHERE = [
    REPO / "datasets" / "code" / "languages",
    REPO / "datasets" / "code" / "adversarial.jsonl",
]
pytestmark = [pytest.mark.docker, pytest.mark.bwrap, pytest.mark.slow]


def _verifiers(line: str) -> set[str]:
    task = json.loads(line).get("task") or {}
    names = {task.get("verifier")} | {c.get("verifier") for c in task.get("checks") or []}
    return {n for n in names if isinstance(n, str)}


def _files() -> list[str]:
    found = []
    for path in sorted((REPO / "datasets").rglob("*.jsonl")):
        if any(path.is_relative_to(elsewhere) for elsewhere in BOTH_BACKENDS_ELSEWHERE):
            continue
        lines = [x for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        try:
            if any(_verifiers(x) & SANDBOXED for x in lines):
                found.append(str(path.relative_to(REPO)))
        except (ValueError, AttributeError):
            continue  # a corpus of deliberately broken lines
    return found


FILES = _files()


def test_the_corpora_that_run_code_are_all_listed() -> None:
    assert "datasets/mesh/scripts.jsonl" in FILES
    assert "datasets/code/adversarial.jsonl" not in FILES  # exact verdicts, both backends
    assert "datasets/examples/code.jsonl" in FILES


@pytest.fixture(scope="module")
def wheel_site() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="verifiers-parity-", dir="/tmp") as tmp:
        site = Path(tmp) / "site"
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target"]
            + [str(site), str(REPO)],
            check=True,
            capture_output=True,
            timeout=600,
        )
        yield site


def _score(site: Path, file: str, backend: str, out: Path) -> list[dict[str, object]]:
    deps = [p for p in sys.path if p.endswith("-packages")]  # no .pth: no editable hook
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), *deps]),
        "VERIFIERS_CACHE_DIR": str(out.parent),
    }
    boot = "import sys; sys.path.pop(0); from verifiers.cli import run; sys.exit(run())"
    proc = subprocess.run(
        [PYTHON, "-c", boot, "score", file, "--sandbox", backend, "--no-cache", "-q"]
        + ["-o", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(x) for x in out.read_text().splitlines() if x.strip()]


@pytest.mark.parametrize("file", FILES)
def test_docker_and_local_give_the_same_status_and_reward(
    file: str, wheel_site: Path, tmp_path: Path
) -> None:
    docker = _score(wheel_site, file, "docker", tmp_path / "docker.jsonl")
    local = _score(wheel_site, file, "local", tmp_path / "local.jsonl")
    assert [r["id"] for r in docker] == [r["id"] for r in local]
    for d, loc in zip(docker, local, strict=True):
        assert (d["status"], d["reward"]) == (loc["status"], loc["reward"]), (d, loc)
        for result in (d, loc):
            error = result.get("error") or {}
            assert not (isinstance(error, dict) and error.get("kind") == "infra"), result
