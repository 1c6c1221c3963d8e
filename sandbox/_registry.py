"""Sandbox backends by name: built-ins, ``@register_backend``, and an entry-point group.

Why a registry: the backend list used to be spelled out in three places (``open_provider``,
the engine's settings, the CLI), so a new backend meant editing all three and a third party
could not add one. Now a backend is a :class:`SandboxProvider` subclass registered by name,
the way verifiers are: built-ins (``docker``, ``local``, ``fake``) are imported on first use
(so ``import verifiers.sandbox`` never loads the docker SDK); others register with the
decorator or through the ``verifiers.sandboxes`` entry-point group, loaded lazily on a miss::

    [project.entry-points."verifiers.sandboxes"]
    podman = "acme_sandbox:PodmanProvider"

``verifiers list`` and ``verifiers sandbox check`` read :func:`backend_status`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import TypeVar

from verifiers.errors import BadInput, SandboxUnavailable

from ._base import SandboxProvider
from ._settings import SandboxSettings

__all__ = [
    "ENTRY_POINT_GROUP",
    "backend_names",
    "backend_status",
    "get_backend",
    "register_backend",
]

ENTRY_POINT_GROUP = "verifiers.sandboxes"
_BUILTIN = {
    "docker": "verifiers.sandbox._docker:DockerProvider",
    "local": "verifiers.sandbox._local:LocalProvider",
    "fake": "verifiers.sandbox._fake:FakeProvider",
}
_registered: dict[str, type[SandboxProvider]] = {}
_problems: dict[str, str] = {}
P = TypeVar("P", bound=type[SandboxProvider])


def register_backend(name: str) -> Callable[[P], P]:
    """Class decorator: make a :class:`SandboxProvider` subclass available as ``name``."""

    def decorate(cls: P) -> P:
        if not (isinstance(cls, type) and issubclass(cls, SandboxProvider)):
            raise TypeError(f"sandbox backend {name!r} must subclass SandboxProvider")
        cls.kind = name
        _registered[name] = cls
        return cls

    return decorate


def _plugin_points() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def backend_names() -> list[str]:
    """Every backend name: built-in, registered and advertised by entry points (not loaded)."""
    return sorted({*_BUILTIN, *_registered, *_plugin_points()})


def _load(target: str, name: str) -> type[SandboxProvider]:
    module_name, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(cls, type) and issubclass(cls, SandboxProvider)):
        raise TypeError(f"{target} is not a SandboxProvider subclass")
    cls.kind = cls.kind or name
    return cls


def get_backend(name: str) -> type[SandboxProvider]:
    """The provider class registered as ``name``.

    Raises:
        BadInput: no backend has that name (the message lists the known ones).
        SandboxUnavailable: the backend's plugin failed to import (the message says why).
    """
    if name in _registered:
        return _registered[name]
    target = _BUILTIN.get(name) or _plugin_points().get(name)
    if target is None:
        known = ", ".join(["auto", *backend_names()])
        raise BadInput(f"unknown sandbox kind {name!r}; use one of: {known}")
    try:
        cls = _load(target, name)
    except ImportError as exc:
        if name in _BUILTIN:
            raise  # a missing optional extra: the caller's MissingDependency path
        _problems[name] = f"{type(exc).__name__}: {exc}"
        raise SandboxUnavailable(
            f"sandbox backend {name!r} ({target}) failed to load: {exc}",
            hint="reinstall the plugin that provides it",
            retryable=False,
        ) from None
    except (AttributeError, TypeError) as exc:
        _problems[name] = str(exc)
        raise SandboxUnavailable(
            f"sandbox backend {name!r} is broken: {exc}", retryable=False
        ) from None
    _registered[name] = cls
    return cls


def backend_status(settings: SandboxSettings | None = None) -> dict[str, tuple[bool, str]]:
    """``{name: (works here, detail)}`` for every backend (what ``verifiers list`` shows)."""
    settings = settings or SandboxSettings()
    out: dict[str, tuple[bool, str]] = {}
    for name in backend_names():
        try:
            out[name] = get_backend(name).probe(settings)
        except Exception as exc:  # one broken backend must not hide the others
            out[name] = (False, f"{type(exc).__name__}: {exc}")
    return out
