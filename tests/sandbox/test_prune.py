"""``verifiers sandbox prune``: stale runtime builds go, current and in-use ones stay.

Runs against a temporary cache (``VERIFIERS_SANDBOX_CACHE``) and a test image prefix, so the
machine's real runtimes are never touched.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from verifiers.sandbox import SandboxSettings
from verifiers.sandbox._images import base_tag, find_images, get_image, image_tag
from verifiers.sandbox._prune import hold_rootfs, prune_images, prune_rootfs
from verifiers.sandbox._runtimes import MARKER, Runtime, load_runtime, rootfs_path
from verifiers.sandbox.cli import main


def _runtime(settings: SandboxSettings) -> Runtime:
    runtime = load_runtime(get_image("python", settings).path)
    assert runtime is not None
    return runtime


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("VERIFIERS_SANDBOX_CACHE", str(tmp_path))
    yield tmp_path / "rootfs"


def _fake_root(parent: Path, name: str) -> Path:
    folder = parent / name
    (folder / MARKER).parent.mkdir(parents=True)
    (folder / MARKER).write_text("{}\n")
    (folder / "usr" / "bin").mkdir(parents=True)
    return folder


def test_prune_removes_stale_roots_and_keeps_current_in_use_and_unknown(cache: Path) -> None:
    settings = SandboxSettings()
    current = _fake_root(cache, rootfs_path(_runtime(settings), settings).name)
    base = _fake_root(cache, f"base-{base_tag(settings).rpartition(':')[2]}")
    stale = _fake_root(cache, "python-0123456789abcdef")
    stale_base = _fake_root(cache, "base-bookworm-000000000000")
    busy = _fake_root(cache, "python-fedcba9876543210")
    unknown = _fake_root(cache, "someone-elses-0123456789abcdef")
    fd = hold_rootfs(busy, lambda: busy)  # what an open local provider holds
    try:
        report = prune_rootfs(settings)
    finally:
        os.close(fd)
    assert sorted(report.removed) == [stale_base.name, stale.name]
    assert report.in_use == [busy.name] and report.unknown == [unknown.name]
    assert not stale.exists() and not stale_base.exists()
    assert current.is_dir() and base.is_dir() and busy.is_dir() and unknown.is_dir()
    # released: the next prune takes it; a dry run first lists it and removes nothing
    assert prune_rootfs(settings, dry_run=True).removed == [busy.name] and busy.is_dir()
    assert prune_rootfs(settings).removed == [busy.name] and not busy.exists()
    assert current.is_dir()


def test_prune_cli_dry_run_lists_and_keeps(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = _fake_root(cache, "python-0123456789abcdef")
    assert main(["prune", "--runtimes-only", "--dry-run"]) == 0
    out = capsys.readouterr()
    assert "would remove stale root filesystem python-0123456789abcdef" in out.out + out.err
    assert stale.is_dir()
    assert main(["prune", "--runtimes-only"]) == 0
    assert not stale.exists()


@pytest.mark.bwrap
def test_a_local_provider_holds_its_roots_until_closed() -> None:
    """The real provider: while it has runners on a runtime's root, prune cannot lock it."""
    import asyncio

    from verifiers.sandbox import LocalProvider

    settings = SandboxSettings(local_isolation="bwrap")
    root = rootfs_path(_runtime(settings), settings)

    def locked_by_someone() -> bool:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def shared_lock_on_root(fd: int) -> bool:
        """``fd`` is open on ``root`` and carries a shared flock (its /proc fdinfo says so)."""
        try:
            same = os.path.samefile(os.readlink(f"/proc/self/fd/{fd}"), root)
            with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as info:
                flocked = any("FLOCK" in x and "READ" in x for x in info)
        except OSError:
            return False
        return same and flocked

    held: list[int] = []

    async def main_() -> None:
        provider = LocalProvider(settings)
        try:
            async with provider.session("python") as sb:
                assert (await sb.exec(["python3", "-c", "print(1)"])).stdout == b"1\n"
            assert locked_by_someone()
            held.extend(provider._holds)
            assert held and all(shared_lock_on_root(fd) for fd in held), held
        finally:
            await provider.close()
        assert not provider._holds

    asyncio.run(main_())
    # Its own locks are gone. (Whether the root is unlocked altogether depends on other
    # providers alive in this test process, e.g. module-scoped fixtures of earlier tests.)
    assert not any(shared_lock_on_root(fd) for fd in held)


@pytest.mark.docker
def test_prune_images_removes_stale_tags_only() -> None:
    """Stale tags of a test prefix go; the current tag and ``latest`` stay (tags of an image
    that already exists: nothing is built)."""
    import docker

    settings = SandboxSettings(image_prefix="verifiers-prune-test")
    client = docker.from_env()
    # Any image to tag: the python runtime's, which CI's setup builds (there is no "base"
    # image on a fresh machine any more; a stale one left by an older build made this pass).
    source = client.images.list(name="verifiers-sandbox/python")[0]
    repository = f"{settings.image_prefix}/python"
    current = image_tag(find_images(settings)["python"], settings)
    tags = [current, f"{repository}:0123456789abcdef", f"{repository}:latest"]
    for tag in tags:
        repo, _, version = tag.rpartition(":")
        source.tag(repo, version)
    try:
        report = prune_images(client, settings)
        assert report.removed == [f"{repository}:0123456789abcdef"]
        left = {
            t
            for image in client.images.list(name=repository)
            for t in image.tags
            if t.startswith(repository + ":")
        }
        assert left == {current, f"{repository}:latest"}
    finally:
        for tag in tags:
            try:
                client.images.remove(tag)
            except docker.errors.ImageNotFound:
                pass
        client.close()
