"""Name -> verifier class registry, filled by ``@register`` and by lazy entry-point plugins.

Plugins declare an entry point in the group ``verifiers.plugins``. The entry point's *name*
is either a full verifier name (``"acme.sql"``) or a namespace (``"acme"``, covering every
``acme.*`` verifier); its *value* is a module (importing it runs its ``@register`` calls) or a
``Verifier`` subclass (registered under the entry point's name). Plugins load only when a
lookup misses, so ``import verifiers`` stays fast. The built-in domains (``code``,
``finance``, ``mesh``, ``render``) are wired the same way in this project's own
``pyproject.toml``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import BadInput, UnknownVerifier, VerifierError
from .protocol import Verifier

__all__ = [
    "ENTRY_POINT_GROUP",
    "get_verifier",
    "installed_verifiers",
    "plugin_problems",
    "register",
]

ENTRY_POINT_GROUP = "verifiers.plugins"

log = logging.getLogger(__name__)

# Built-in namespaces, importable without any installed entry point (a source checkout).
_BUILTIN: dict[str, str] = {
    "answer": "verifiers.answers",
    "format": "verifiers.answers",
    "code": "verifiers.domains.code",
    "finance": "verifiers.domains.finance",
    "mesh": "verifiers.domains.mesh",
    "render": "verifiers.domains.render",
    "game": "verifiers.domains.godot",
    "cad": "verifiers.domains.cad",
}

_registry: dict[str, type[Verifier[Any]]] = {}
_loaded_entry_points: set[str] = set()
_problems: dict[str, str] = {}
_lock = threading.RLock()

V = TypeVar("V", bound=type[Verifier[Any]])


def register(name: str) -> Callable[[V], V]:
    """Class decorator: make a :class:`Verifier` available under ``name``.

    Raises:
        VerifierError: the name is taken by a different class, or the class lacks ``Spec``.
    """
    if not name or name != name.strip():
        raise VerifierError(f"invalid verifier name {name!r}")

    def decorate(cls: V) -> V:
        if not isinstance(cls, type) or not issubclass(cls, Verifier):
            raise VerifierError(f"@register({name!r}) must decorate a Verifier subclass")
        if not hasattr(cls, "Spec"):
            raise VerifierError(f"verifier {name!r} must define a Spec model")
        with _lock:
            existing = _registry.get(name)
            if existing is not None and existing.__qualname__ != cls.__qualname__:
                raise VerifierError(
                    f"verifier name {name!r} already registered by {existing.__module__}."
                    f"{existing.__qualname__}"
                )
            cls.name = name
            _registry[name] = cls
        return cls

    return decorate


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    return list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def _load_entry_point(ep: importlib.metadata.EntryPoint) -> None:
    key = f"{ep.name}={ep.value}"
    if key in _loaded_entry_points:
        return
    _loaded_entry_points.add(key)
    try:
        obj = ep.load()
    except VerifierError as exc:  # e.g. MissingDependency raised at import
        _problems[ep.name] = str(exc)
        return
    except Exception as exc:
        _problems[ep.name] = f"plugin {ep.name!r} ({ep.value}) failed to load: {exc!r}"
        log.warning(_problems[ep.name])
        return
    if isinstance(obj, type) and issubclass(obj, Verifier) and ep.name not in _registry:
        register(ep.name)(obj)


def _load_builtin(namespace: str) -> None:
    module = _BUILTIN.get(namespace)
    if module is None or f"builtin:{module}" in _loaded_entry_points:
        return
    _loaded_entry_points.add(f"builtin:{module}")
    try:
        importlib.import_module(module)
    except VerifierError as exc:
        _problems[namespace] = str(exc)
    except ImportError as exc:
        _problems[namespace] = f"built-in verifiers {module!r} failed to import: {exc}"


def _load_plugins_for(name: str) -> None:
    namespace = name.split(".", 1)[0]
    _load_builtin(namespace)
    for ep in _entry_points():
        if ep.name in (name, namespace):
            _load_entry_point(ep)


def get_verifier(name: str) -> type[Verifier[Any]]:
    """The class registered under ``name``, loading plugins on a miss.

    Raises:
        UnknownVerifier: nothing provides ``name``; the message lists what is installed.
        BadInput: the plugin providing ``name`` could not load (missing extra, ...).
    """
    with _lock:
        cls = _registry.get(name)
        if cls is not None:
            return cls
        _load_plugins_for(name)
        cls = _registry.get(name)
        if cls is not None:
            return cls
        namespace = name.split(".", 1)[0]
        problem = _problems.get(name) or _problems.get(namespace)
        if problem:
            raise BadInput(f"verifier {name!r} is unavailable: {problem}")
        raise UnknownVerifier(name, installed_verifiers())


def installed_verifiers() -> list[str]:
    """Every verifier name available, loading all plugins."""
    with _lock:
        for namespace in _BUILTIN:
            _load_builtin(namespace)
        for ep in _entry_points():
            _load_entry_point(ep)
        return sorted(_registry)


def plugin_problems() -> dict[str, str]:
    """Plugins that failed to load, by entry-point name, with the reason."""
    installed_verifiers()
    return dict(_problems)
