"""Acceptance for issue 13: the same trajectory gets the same reward on every backend.

Every file under ``datasets/`` whose tasks run model code in the sandbox is scored twice by the
``verifiers`` CLI, ``--sandbox docker`` and ``--sandbox local`` (the two runs at once), from the
repository root, with the project installed from its wheel into a folder under ``/tmp`` (not
editable: the layout that used to hide the host's packages from bubblewrap jobs and shadow
``verifiers.domains``).
Status and reward must match line by line, and no line may be an ``infra`` error (two broken
backends would otherwise agree).

render.blender runs through ``ctx.sandbox("blender")`` on the ``blender`` runtime (bpy in its
own root filesystem), so its scene files are in the list too.

Corpora whose own tests already score every row on both backends against its expected verdict
(a stronger check than agreement: two backends that agree on a wrong verdict fail there) are not
scored a third and fourth time here; :data:`BOTH_BACKENDS_ELSEWHERE` names each one's test, and
``test_the_corpora_checked_elsewhere_are_checked_there`` keeps the list honest. The wheel layout
this file adds stays covered: every sandboxed verifier keeps a corpus here (code.tests:
``datasets/examples/code.jsonl``; mesh.constraints: ``datasets/examples/mesh.jsonl``, whose host
code is the same module script mode runs; render.blender: the render files). The game.godot,
cad.script and code.workspace corpora are not here either (their verifiers are not in
``SANDBOXED``; their own corpus tests run on docker and local).
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
BOTH_BACKENDS_ELSEWHERE = {
    # every row on bubblewrap, every row but the judge-only families on Docker (SANDBOX_MARKS)
    "datasets/code/languages": "tests/domains/code/test_code_languages.py",
    # every attack exactly fail 0.0, every control pass 1.0, on bubblewrap and on Docker
    "datasets/code/adversarial.jsonl": "tests/domains/code/test_code_adversarial.py",
    # every attack, probe and victim (fail 0 / pass 1 / fail 0) on one runner per backend
    # (its `scored` fixture: local and docker)
    "datasets/code/cross_sample.jsonl": "tests/domains/code/test_code_cross_sample.py",
    # every row's status, reward and feedback needles on Docker and on bubblewrap
    "datasets/mesh/scripts.jsonl": "tests/domains/mesh/test_mesh_datasets.py",
    # every row's (status, reward) on one warm worker per backend (tests/sandbox/conftest.py's
    # `backend` fixture: docker and bwrap, behind the score_rows / new_provider fixtures)
    "datasets/sandbox/cross_sample.jsonl": "tests/sandbox/test_cross_sample.py",
    "datasets/sandbox/runner_loss.jsonl": "tests/sandbox/test_runner_loss.py",
    "datasets/sandbox/runtime_probes.jsonl": "tests/sandbox/test_runtime_probes.py",
}
"""Corpora scored on both backends, every row against its expected verdict, by another test
(the value). Scoring them here too cost 86 s of this file's 250 s (measured at load 15)."""
pytestmark = [pytest.mark.docker, pytest.mark.bwrap, pytest.mark.slow]


def _verifiers(line: str) -> set[str]:
    task = json.loads(line).get("task") or {}
    names = {task.get("verifier")} | {c.get("verifier") for c in task.get("checks") or []}
    return {n for n in names if isinstance(n, str)}


def _files() -> list[str]:
    found = []
    for path in sorted((REPO / "datasets").rglob("*.jsonl")):
        if any(path.is_relative_to(REPO / elsewhere) for elsewhere in BOTH_BACKENDS_ELSEWHERE):
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
    assert "datasets/code/adversarial.jsonl" not in FILES  # exact verdicts, both backends
    assert "datasets/mesh/scripts.jsonl" not in FILES
    for kept in ("examples/code.jsonl", "examples/mesh.jsonl", "render/scenes.jsonl"):
        assert f"datasets/{kept}" in FILES  # each sandboxed verifier, from the wheel


def test_the_corpora_checked_elsewhere_are_checked_there() -> None:
    """Each corpus left out exists and its named test reads it (that test's backend
    parameters, docker and bwrap, are in the comments of :data:`BOTH_BACKENDS_ELSEWHERE`)."""
    for corpus, test in BOTH_BACKENDS_ELSEWHERE.items():
        assert (REPO / corpus).exists(), corpus
        source = (REPO / test).read_text(encoding="utf-8")
        folder, name = Path(corpus).parts[-2:]
        named = corpus in source or (f'"{folder}"' in source and f'"{name}"' in source)
        assert named, (corpus, test)


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


def _score_both(site: Path, file: str, tmp: Path) -> dict[str, list[dict[str, object]]]:
    """``file`` scored by the CLI on Docker and on bubblewrap, the two runs at once (each is
    its own process with its own pool; overlapped, one's start-up and waits fill the other's
    idle core)."""
    deps = [p for p in sys.path if p.endswith("-packages")]  # no .pth: no editable hook
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), *deps]),
        "VERIFIERS_CACHE_DIR": str(tmp),
    }
    boot = "import sys; sys.path.pop(0); from verifiers.cli import run; sys.exit(run())"
    procs = {
        backend: subprocess.Popen(
            [PYTHON, "-c", boot, "score", file, "--sandbox", backend, "--no-cache", "-q"]
            + ["-o", str(tmp / f"{backend}.jsonl")],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for backend in ("docker", "local")
    }
    errors = {}
    try:
        for backend, proc in procs.items():
            errors[backend] = proc.communicate(timeout=900)[1]
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for backend, proc in procs.items():
        assert proc.returncode == 0, (backend, errors[backend][-3000:])
    return {
        backend: [json.loads(x) for x in (tmp / f"{backend}.jsonl").read_text().splitlines() if x]
        for backend in procs
    }


@pytest.mark.parametrize("file", FILES)
def test_docker_and_local_give_the_same_status_and_reward(
    file: str, wheel_site: Path, tmp_path: Path
) -> None:
    scored = _score_both(wheel_site, file, tmp_path)
    docker, local = scored["docker"], scored["local"]
    assert [r["id"] for r in docker] == [r["id"] for r in local]
    for d, loc in zip(docker, local, strict=True):
        assert (d["status"], d["reward"]) == (loc["status"], loc["reward"]), (d, loc)
        for result in (d, loc):
            error = result.get("error") or {}
            assert not (isinstance(error, dict) and error.get("kind") == "infra"), result
