"""Unit tests of the public surface: ``__all__``, the fake provider, limits, image hashing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import verifiers.sandbox as sandbox
from verifiers.sandbox import ExecResult, FakeCall, FakeProvider, Limits, SandboxSettings
from verifiers.sandbox._client import merge_limits
from verifiers.sandbox._images import ImageDef, _sources_entries, debian_mirror, image_tag

from verifiers.errors import BadInput, InfraError


def test_all_is_pinned() -> None:
    assert sorted(sandbox.__all__) == [
        "ExecResult",
        "FakeCall",
        "FakeProvider",
        "FakeSandbox",
        "LimitOverrides",
        "Limits",
        "LocalProvider",
        "Sandbox",
        "SandboxProvider",
        "SandboxSettings",
        "backend_names",
        "backend_status",
        "detect_isolation",
        "docker_ready",
        "get_backend",
        "open_provider",
        "register_backend",
    ]
    for name in sandbox.__all__:
        assert getattr(sandbox, name) is not None


def test_import_does_not_load_docker() -> None:
    import subprocess
    import sys

    code = "import sys, verifiers.sandbox; print('docker' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_fake_provider_records_calls_and_files() -> None:
    def handler(call: FakeCall) -> ExecResult:
        assert call.files["solution.py"] == b"x = 1"
        assert "tests/t.py" in call.readonly
        return ExecResult(returncode=1, stdout=b"1 failed")

    async def main() -> FakeProvider:
        provider = sandbox.open_provider("fake")
        assert isinstance(provider, FakeProvider)
        provider.handler = handler
        async with provider.session("python", timeout_s=3) as sb:
            await sb.write_files({"solution.py": "x = 1"})
            await sb.write_files({"tests/t.py": b"assert 1"}, readonly=True)
            result = await sb.exec(["python3", "-m", "pytest"])
            assert result.returncode == 1 and not result.ok
            assert await sb.read_file("solution.py") == b"x = 1"
            with pytest.raises(FileNotFoundError):
                await sb.read_file("nope")
            with pytest.raises(BadInput):
                await sb.read_file("../escape")
        with pytest.raises(InfraError):
            await sb.exec(["true"])
        await provider.close()
        return provider

    provider = asyncio.run(main())
    assert provider.calls[0].argv == ["python3", "-m", "pytest"]
    assert provider.calls[0].timeout == 3


def test_fake_handler_may_be_async() -> None:
    async def handler(call: FakeCall) -> ExecResult:
        await asyncio.sleep(0)
        return ExecResult(returncode=0, stdout=call.stdin or b"")

    async def main() -> bytes:
        provider = FakeProvider(handler)
        async with provider.session() as sb:
            return (await sb.exec(["cat"], stdin=b"hi")).stdout

    assert asyncio.run(main()) == b"hi"


def test_merge_limits() -> None:
    base = Limits(timeout_s=5)
    assert merge_limits(base, {}) is base
    merged = merge_limits(base, {"memory_mb": 64})
    assert merged.timeout_s == 5 and merged.memory_mb == 64
    assert merge_limits(base, {"limits": Limits(pids=3)}).pids == 3
    with pytest.raises(BadInput):
        merge_limits(base, {"bogus": 1})
    with pytest.raises(BadInput):
        merge_limits(base, {"timeout_s": -1})


def test_unknown_kind_is_rejected() -> None:
    with pytest.raises(BadInput):
        sandbox.open_provider("podman")  # type: ignore[arg-type]


def test_image_tag_follows_inputs(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\n")
    settings = SandboxSettings()
    first = image_tag(ImageDef("demo", folder), settings)
    assert first == image_tag(ImageDef("demo", folder), settings)
    assert first.startswith("verifiers-sandbox/demo:")
    (folder / "extra.txt").write_text("changed")
    assert image_tag(ImageDef("demo", folder), settings) != first


def test_mirror_comes_from_host_apt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERIFIERS_DEBIAN_MIRROR", "http://mirror.example/debian")
    assert debian_mirror() == "http://mirror.example/debian"
    monkeypatch.delenv("VERIFIERS_DEBIAN_MIRROR")
    entries = list(_sources_entries())
    expected = next(
        (u.rstrip("/") for u, s in entries if "bookworm" in s and "security" not in u),
        "http://deb.debian.org/debian",
    )
    assert debian_mirror() == expected


def test_builtin_python_image_is_registered() -> None:
    from verifiers.sandbox._images import find_images

    images = find_images(SandboxSettings())
    assert "python" in images
    assert (images["python"].path / "runtime.toml").is_file()


@pytest.mark.docker
def test_auto_picks_docker_when_engine_and_image_are_ready() -> None:
    assert sandbox.docker_ready()
    assert not sandbox.docker_ready(image="no-such-image")
    unreachable = SandboxSettings(docker_url="unix:///nonexistent/docker.sock")
    assert not sandbox.docker_ready(unreachable)

    async def main() -> tuple[str, str]:
        auto = sandbox.open_provider("auto")
        fallback = sandbox.open_provider("auto", unreachable)
        try:
            return auto.kind, fallback.kind  # type: ignore[attr-defined]
        finally:
            await auto.close()
            await fallback.close()

    assert asyncio.run(main()) == ("docker", "local")


@pytest.mark.docker
def test_docker_kind_without_engine_says_how_to_fix() -> None:
    from verifiers.errors import SandboxUnavailable

    with pytest.raises(SandboxUnavailable) as info:
        sandbox.open_provider("docker", SandboxSettings(docker_url="unix:///nonexistent/d.sock"))
    assert "not reachable" in info.value.message and info.value.hint
