"""The root object the project process serves (loaded there by the server's ``load`` op).

``getattr(root, "calc")`` (a remote path ``["calc", "add"]`` of the runner's proxies) imports
``calc`` from the agent's tree, here, in the project process; the ``__verifiers_*__``
functions carry what the runner's proxies forward that the server has no op for: attribute
assignment and deletion (``monkeypatch.setattr``) and ``isinstance``/``issubclass`` against a
project class. A locator is ``[base, name, ...]``: ``base`` an object handle or ``None`` for
this root, then attribute names.
"""

from __future__ import annotations

import importlib as _importlib
import os as _os
import sys as _sys

_here = _os.path.dirname(_os.path.abspath(__file__))
# As ``pytest`` run from the tree's root would have it: the tree first on the import path,
# never the runner's own directory.
if __name__ == "__verifiers_project__":  # only as the server loads it, never on the host
    _sys.path[:] = [p for p in _sys.path if p not in (_here, "", ".")]
    _sys.path.insert(0, _os.getcwd())
_ROOT = _sys.modules[__name__]


def __getattr__(name: str) -> object:
    if name.startswith("__"):
        raise AttributeError(name)
    return _importlib.import_module(name)


def _locate(loc: list[object]) -> object:
    obj: object = _ROOT if loc[0] is None else loc[0]
    for name in loc[1:]:
        obj = getattr(obj, str(name))
    return obj


def __verifiers_setattr__(loc: list[object], name: str, value: object) -> None:
    setattr(_locate(loc), name, value)


def __verifiers_delattr__(loc: list[object], name: str) -> None:
    delattr(_locate(loc), name)


def __verifiers_isinstance__(obj: list[object], cls: list[object]) -> bool:
    return bool(isinstance(_locate(obj), _locate(cls)))  # type: ignore[arg-type]


def __verifiers_issubclass__(sub: list[object], cls: list[object]) -> bool:
    return bool(issubclass(_locate(sub), _locate(cls)))  # type: ignore[arg-type]
