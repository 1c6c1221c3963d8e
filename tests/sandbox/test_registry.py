"""The backend registry (issue 13 item 4): built-ins, the decorator, and real entry points."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from verifiers.sandbox import (
    FakeProvider,
    LocalProvider,
    SandboxProvider,
    backend_names,
    backend_status,
    get_backend,
    open_provider,
)
from verifiers.sandbox._registry import _registered

import verifiers
from verifiers.errors import BadInput

PLUGIN = '''
from contextlib import asynccontextmanager
from verifiers.sandbox import ExecResult, FakeSandbox, SandboxProvider


class EchoProvider(SandboxProvider):
    """A third-party backend: every command prints its argv."""

    def __init__(self, settings):
        self.settings = settings

    @classmethod
    def probe(cls, settings):
        return True, "echo backend"

    def session(self, image="python", **limits):
        return self._session(image)

    @asynccontextmanager
    async def _session(self, image):
        def handler(call):
            return ExecResult(returncode=0, stdout=" ".join(call.argv).encode())
        sandbox = FakeSandbox(handler, image=image)
        yield sandbox

    async def close(self):
        pass
'''


@pytest.fixture()
def echo_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A distribution on sys.path advertising ``echo`` in the verifiers.sandboxes group."""
    (tmp_path / "acme_echo.py").write_text(textwrap.dedent(PLUGIN))
    info = tmp_path / "acme_echo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-echo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[verifiers.sandboxes]\necho = acme_echo:EchoProvider\nbroken = acme_missing:X\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    _registered.pop("echo", None)
    sys.modules.pop("acme_echo", None)


def test_builtins_are_registered_and_implement_the_abc() -> None:
    assert {"docker", "fake", "local"} <= set(backend_names())
    assert get_backend("local") is LocalProvider and get_backend("fake") is FakeProvider
    for name in ("docker", "fake", "local"):
        assert issubclass(get_backend(name), SandboxProvider)


def test_an_unknown_backend_lists_the_known_ones() -> None:
    with pytest.raises(BadInput, match="unknown sandbox kind 'podman'; use one of: auto, "):
        open_provider("podman")
    with pytest.raises(ValueError, match="unknown sandbox 'podman'"):
        verifiers.EngineSettings(sandbox="podman")


def test_a_plugin_backend_found_through_its_entry_point(echo_plugin: None) -> None:
    assert "echo" in backend_names()
    status = backend_status()
    assert status["echo"] == (True, "echo backend")
    assert status["broken"][0] is False and "acme_missing" in status["broken"][1]

    async def main() -> bytes:
        provider = open_provider("echo")
        async with provider.session("python") as sb:
            result = await sb.exec(["python3", "-c", "1"])
        await provider.close()
        return result.stdout

    assert asyncio.run(main()) == b"python3 -c 1"
    assert verifiers.EngineSettings(sandbox="echo").sandbox == "echo"


def test_the_decorator_registers_a_subclass_only() -> None:
    from verifiers.sandbox import register_backend

    with pytest.raises(TypeError, match="must subclass SandboxProvider"):
        register_backend("nope")(object)  # type: ignore[type-var]
