"""``verifiers score`` builds a missing runtime once, before scoring (issue 13).

A throwaway runtime (``tiny``: no apt, no wheels, checks ``json`` imports) in a throwaway
cache, so CI never rebuilds a real runtime. Its Debian base is seeded with hard links of the
built ``python`` runtime minus its wheels (the real base has no python, and debootstrap takes
minutes): the build itself runs for real (copy, build script under bubblewrap, check, marker).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from verifiers.sandbox import SandboxSettings
from verifiers.sandbox._images import base_tag
from verifiers.sandbox._runtimes import MARKER, load_runtime, rootfs_path

from verifiers import Result, Spec, Trajectory, Verifier, VerifierContext, register, settings
from verifiers.cli import main as cli_main

pytestmark = pytest.mark.bwrap

TINY = """[runtime]
description = "test-only: the python runtime's interpreter, no packages"
python = "/usr/bin/python3"
imports = ["json"]
"""


class TinySpec(Spec):
    runtime: str = "tiny"


@register("test.preflight")
class NeedsTiny(Verifier[TinySpec]):
    Spec = TinySpec
    cacheable = False

    async def verify(self, trajectory: Trajectory, spec: TinySpec, ctx: VerifierContext) -> Result:
        async with ctx.sandbox(spec.runtime, timeout_s=20) as sb:
            run = await sb.exec(["python3", "-c", "print(6 * 7)"])
        return Result.scored(1.0 if run.stdout == b"42\n" else 0.0, feedback=run.text()[:200])


@pytest.fixture()
def tiny_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The throwaway runtime, an empty throwaway cache, and three items that need it."""
    images = tmp_path / "images"
    (images / "tiny").mkdir(parents=True)
    (images / "tiny" / "runtime.toml").write_text(TINY)
    cache = tmp_path / "cache"
    (cache / "rootfs").mkdir(parents=True)
    python = load_runtime(Path(__file__).resolve().parents[2] / "sandbox" / "images" / "python")
    assert python is not None
    python_root = rootfs_path(python, SandboxSettings())  # the real cache's, before the switch
    monkeypatch.setenv("VERIFIERS_SANDBOX_IMAGES", str(images))
    monkeypatch.setenv("VERIFIERS_SANDBOX_CACHE", str(cache))
    monkeypatch.setenv("VERIFIERS_CACHE_DIR", str(tmp_path / "results"))
    rows = tmp_path / "in.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"id": f"t{i}", "completion": "", "task": {"verifier": "test.preflight"}})
            + "\n"
            for i in range(3)
        )
    )
    return {"rows": rows, "cache": cache, "out": tmp_path / "out.jsonl", "python": python_root}


def _seed_base(cache: Path, built: Path) -> None:
    if not (built / MARKER).is_file():
        pytest.fail(f"the python runtime is not built ({built}): run `verifiers sandbox build`")
    base = cache / "rootfs" / f"base-{base_tag(SandboxSettings()).rpartition(':')[2]}"
    subprocess.run(["cp", "-al", str(built), str(base)], check=True, timeout=300)
    (base / MARKER).unlink()  # a link: the python runtime's own marker stays
    for wheel in (base / "usr" / "local" / "lib").glob("python3*"):
        shutil.rmtree(wheel)  # unlinks the seed's names only


def _score(env: dict[str, Path], *extra: str) -> list[dict[str, Any]]:
    code = cli_main(["score", str(env["rows"]), "-o", str(env["out"]), "--force", "-q", *extra])
    assert code == 0
    return [json.loads(x) for x in env["out"].read_text().splitlines()]


def _tiny_root() -> Path:
    images = settings.env("VERIFIERS_SANDBOX_IMAGES")
    assert images is not None  # the fixture above sets it
    runtime = load_runtime(Path(images) / "tiny")
    assert runtime is not None
    return rootfs_path(runtime, SandboxSettings())


def test_score_builds_a_missing_runtime_once_before_scoring(
    tiny_env: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _seed_base(tiny_env["cache"], tiny_env["python"])
    # --no-build: the old rule, error/infra naming the build command, nothing built.
    results = _score(tiny_env, "--sandbox", "local", "--no-build")
    assert {(r["status"], r["error"]["kind"]) for r in results} == {("error", "infra")}
    assert all("verifiers sandbox build tiny" in r["error"]["message"] for r in results), results
    assert not _tiny_root().exists()
    capsys.readouterr()

    results = _score(tiny_env, "--sandbox", "local")
    err = capsys.readouterr().err
    assert [(r["status"], r["reward"]) for r in results] == [("pass", 1.0)] * 3, results
    assert err.count("is not built for --sandbox local: building it now") == 1, err
    assert "tiny: copying the base" in err and "runtime 'tiny' built in" in err, err
    assert (_tiny_root() / MARKER).is_file()

    _score(tiny_env, "--sandbox", "local")  # built: no build, no message
    assert "building" not in capsys.readouterr().err


def test_a_runtime_that_cannot_be_built_stays_error_infra_with_the_hint(
    tiny_env: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No base and no debootstrap on PATH (a host that cannot build): one line says so, the
    items stay error/infra with the build command, and scoring still runs."""
    assert shutil.which("debootstrap") is not None
    path = [p for p in os.environ["PATH"].split(":") if not (Path(p) / "debootstrap").exists()]
    monkeypatch.setenv("PATH", ":".join(path))
    assert shutil.which("debootstrap") is None
    results = _score(tiny_env, "--sandbox", "local")
    err = capsys.readouterr().err
    assert "runtime 'tiny' could not be built here" in err and "debootstrap" in err, err
    assert {(r["status"], r["error"]["kind"]) for r in results} == {("error", "infra")}
