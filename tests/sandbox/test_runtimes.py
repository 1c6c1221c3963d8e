"""Runtimes as data (issue 13 items 1-2): one definition, the same files on every backend.

Real builds, real bubblewrap, real Docker: the ``python`` runtime is built by CI setup
(``verifiers sandbox build python``) into a root filesystem that the local backend runs jobs in
and that the Docker image is imported from.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from verifiers.sandbox import LocalProvider, SandboxSettings
from verifiers.sandbox._images import find_images, get_image, image_tag
from verifiers.sandbox._runtimes import load_runtime, rootfs_path, runtime_hash

from verifiers.errors import InfraError, SandboxUnavailable

REPO = Path(__file__).resolve().parents[2]
PYTHON = load_runtime(get_image("python", SandboxSettings()).path)
assert PYTHON is not None

# What a job reports about the interpreter and every installed distribution.
INVENTORY = r"""
import importlib.metadata as md, json, os, sys
dists = sorted((d.metadata["Name"].lower(), d.version) for d in md.distributions())
print(json.dumps({"executable": sys.executable, "version": sys.version, "path": sys.path,
                  "dists": dists, "cwd_parent": os.path.dirname(os.getcwd()),
                  "env": sorted(k for k in os.environ)}))
"""

BOOLEAN = """
import trimesh
part = trimesh.creation.box((20, 20, 20)).difference(trimesh.creation.cylinder(5, 30))
print(part.is_volume, round(float(part.volume), 3))
"""


def make_provider(kind: str) -> Any:
    if kind == "docker":
        from verifiers.sandbox._docker import DockerProvider

        return DockerProvider(SandboxSettings())
    return LocalProvider(SandboxSettings(local_isolation="bwrap"))


def _run(kind: str, files: dict[str, str], argv: list[str]) -> Any:
    async def main() -> Any:
        provider = make_provider(kind)
        try:
            async with provider.session("python", timeout_s=60, memory_mb=1024) as sb:
                await sb.write_files(files)
                return await sb.exec(argv)
        finally:
            await provider.close()

    return asyncio.run(main())


def test_every_pinned_distribution_is_installed_at_its_pin(backend: str) -> None:
    kind = backend
    assert PYTHON is not None
    result = _run(kind, {"inv.py": INVENTORY}, ["python3", "inv.py"])
    assert result.returncode == 0, result.text("stderr")
    got = dict(json.loads(result.stdout)["dists"])
    for name, version in PYTHON.pins().items():
        assert got.get(name) == version, (name, got.get(name), version)


@pytest.mark.docker
@pytest.mark.bwrap
def test_docker_and_local_jobs_see_the_same_interpreter_packages_and_env() -> None:
    docker = _run("docker", {"inv.py": INVENTORY}, ["python3", "inv.py"])
    local = _run("local", {"inv.py": INVENTORY}, ["python3", "inv.py"])
    assert docker.returncode == local.returncode == 0, (docker.stderr, local.stderr)
    assert json.loads(docker.stdout) == json.loads(local.stdout)


@pytest.mark.bwrap
def test_local_jobs_never_see_the_hosts_venv() -> None:
    probe = (
        "import os, sys\n"
        f"print(os.path.exists({sys.prefix!r}), os.path.exists({str(REPO)!r}))\n"
        "import pydantic\n"  # installed on the host, not in the runtime
    )
    result = _run("local", {"p.py": probe}, ["python3", "p.py"])
    assert result.stdout == b"False False\n"
    assert b"No module named 'pydantic'" in result.stderr


def test_a_manifold_boolean_works_on_both_backends(backend: str) -> None:
    kind = backend
    # The python image used to lack manifold3d: a correct script failed in Docker only.
    result = _run(kind, {"b.py": BOOLEAN}, ["python3", "b.py"])
    assert result.returncode == 0, result.text("stderr")
    assert result.stdout.startswith(b"True ")


@pytest.mark.docker
def test_the_docker_image_and_the_rootfs_share_one_hash() -> None:
    settings = SandboxSettings()
    assert PYTHON is not None
    assert image_tag(get_image("python", settings), settings).endswith(
        ":" + runtime_hash(PYTHON, settings)
    )
    assert rootfs_path(PYTHON, settings).name == f"python-{runtime_hash(PYTHON, settings)}"


@pytest.mark.docker
def test_a_folder_is_imported_with_the_runtimes_env_workdir_and_labels(tmp_path: Path) -> None:
    """The one ``docker import`` (base and runtimes alike) on a tiny folder: the image has the
    job environment the local backend gives, ``/work``, and the labels the cleanup finds."""
    import docker
    from verifiers.sandbox._images import LABEL, docker_import
    from verifiers.sandbox._runtimes import image_changes

    assert PYTHON is not None
    (tmp_path / "marker.txt").write_text("imported\n")
    tag = f"verifiers-test/import-{os.getpid()}:t"
    client = docker.from_env()
    try:
        docker_import(client, tmp_path, tag, image_changes(PYTHON, LABEL))
        config = client.images.get(tag).attrs["Config"]
        env = dict(item.split("=", 1) for item in config["Env"])
        assert env == {**PYTHON.job_env(), "PATH": PYTHON.path_env}
        assert config["WorkingDir"] == "/work"
        assert config["Labels"] == {LABEL: "image", f"{LABEL}.image": "python"}
    finally:
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.remove(tag, force=True)
        client.close()


def _definition(folder: Path, body: str) -> Path:
    runtime = folder / "python"
    runtime.mkdir(parents=True)
    (runtime / "runtime.toml").write_text(body)
    return folder


UNBUILT = '[runtime]\napt = ["python3"]\nwheels = ["six==1.16.0"]\nimports = ["six"]\n'


@pytest.mark.bwrap
def test_an_unbuilt_runtime_is_unavailable_at_session_start_with_the_fix(tmp_path: Path) -> None:
    settings = SandboxSettings(image_dirs=(_definition(tmp_path, UNBUILT),))
    provider = LocalProvider(settings)
    try:
        with pytest.raises(SandboxUnavailable) as info:
            provider.session("python")
        assert info.value.hint == "run `verifiers sandbox build python`"
        with pytest.raises(SandboxUnavailable, match="no sandbox image named 'nope'"):
            provider.session("nope")
    finally:
        asyncio.run(provider.close())


def _mesh_lines() -> list[dict[str, Any]]:
    path = REPO / "datasets" / "mesh" / "scripts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.bwrap
def test_a_broken_runtime_is_error_infra_never_a_score(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import verifiers

    monkeypatch.setenv("VERIFIERS_SANDBOX_IMAGES", str(_definition(tmp_path, UNBUILT)))
    results = verifiers.score(
        _mesh_lines(), base_dir=REPO / "datasets" / "mesh", sandbox="local", retries=0
    )
    assert results and all(r.status == "error" and r.reward is None for r in results)
    assert {r.error.kind for r in results if r.error} == {"infra"}
    assert all(r.error and "verifiers sandbox build python" in r.error.message for r in results)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ('[runtime]\nwheels = ["numpy"]\n', "is not pinned; write it as 'name==version'"),
        ('[runtime]\nwheels = ["numpy>=2"]\n', "is not pinned"),
        ('[runtime]\npackages = ["x"]\n', "unknown key(s) ['packages']"),
        ('[runtime]\npython = "python3"\n', "must be an absolute path"),
        ("[runtime]\napt = 3\n", "apt must be a list of strings"),
        ("[other]\n", "exactly one [runtime] table"),
        ("[runtime\n", "not valid TOML"),
    ],
)
def test_a_malformed_definition_names_the_problem(tmp_path: Path, body: str, fragment: str) -> None:
    folder = _definition(tmp_path, body) / "python"
    with pytest.raises(InfraError) as info:
        load_runtime(folder)
    assert fragment in info.value.message
    assert str(folder / "runtime.toml") in info.value.message


def test_every_builtin_runtime_pins_every_wheel() -> None:
    runtimes = [load_runtime(i.path) for i in find_images(SandboxSettings()).values()]
    assert PYTHON in runtimes
    wanted = {"pytest", "numpy", "scipy", "trimesh", "manifold3d", "networkx", "rtree"}
    assert wanted <= set(PYTHON.pins())


def test_changing_a_definition_changes_its_hash(tmp_path: Path) -> None:
    settings = SandboxSettings()
    first = load_runtime(_definition(tmp_path / "a", UNBUILT) / "python")
    second = load_runtime(
        _definition(tmp_path / "b", UNBUILT.replace("1.16.0", "1.17.0")) / "python"
    )
    same = load_runtime(_definition(tmp_path / "c", UNBUILT) / "python")
    assert first is not None and second is not None and same is not None
    assert runtime_hash(first, settings) != runtime_hash(second, settings)
    assert runtime_hash(first, settings) == runtime_hash(same, settings)
