r"""Isolated execution of untrusted code: hardened containers, a local embedded backend, a fake.

Use a provider from :func:`open_provider` and one session per job::

    provider = open_provider("auto")
    async with provider.session("python", timeout_s=5, memory_mb=256) as sb:
        await sb.write_files({"main.py": "print(6 * 7)"})
        result = await sb.exec(["python3", "main.py"])
        assert result.stdout == b"42\n"
    await provider.close()

A failing command is an :class:`ExecResult` (``returncode``, ``timed_out``, ``oom_killed``,
``truncated``); only a provider that cannot work raises (``SandboxUnavailable`` with a hint).
Importing this package does not import the docker SDK.
"""

from __future__ import annotations

from ._base import ExecResult, LimitOverrides, Limits, Sandbox, SandboxProvider
from ._fake import FakeCall, FakeProvider, FakeSandbox
from ._local import LocalProvider, detect_isolation
from ._registry import backend_names, backend_status, get_backend, register_backend
from ._settings import SandboxSettings

__all__ = [
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

ProviderKind = str
"""``auto`` or a registered backend name (``docker``, ``local``, ``fake``, plugins)."""


def docker_ready(settings: SandboxSettings | None = None, image: str = "python") -> bool:
    """True when a Docker engine answers and ``image`` is built (what ``auto`` checks)."""
    try:
        from ._docker import engine_and_image_ready
    except ImportError:
        return False
    return engine_and_image_ready(settings or SandboxSettings(), image)


def open_provider(
    kind: ProviderKind = "auto", settings: SandboxSettings | None = None
) -> SandboxProvider:
    """Open a sandbox provider.

    Args:
        kind: ``docker`` (warm pool of hardened containers), ``local`` (runner under
            bubblewrap in the runtime's root filesystem), ``fake`` (no execution; for unit
            tests), a backend registered by a plugin (``verifiers.sandboxes`` entry points), or
            ``auto``: docker when an engine is reachable and the ``python`` image is built,
            else local.
        settings: Pool sizes, limits and backend options (defaults documented on
            :class:`SandboxSettings`).

    Raises:
        BadInput: no backend has that name (the message lists the known ones).
        SandboxUnavailable: the requested backend cannot work here (the hint says why).
        MissingDependency: ``docker`` was requested without the docker SDK installed.
    """
    settings = settings or SandboxSettings()
    if kind == "auto":
        kind = "docker" if docker_ready(settings) else "local"
    return get_backend(kind).from_settings(settings)
