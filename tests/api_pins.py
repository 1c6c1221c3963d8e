"""The shapes every public-API pin test shares (imported as ``api_pins``).

A pin test says which names a package exports, that each resolves, and that importing it
stays light; these helpers say it once, so each test file only lists its own names.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterable
from types import ModuleType


def assert_pinned(
    module: ModuleType, names: Iterable[str], *, registers: Iterable[str] = ()
) -> None:
    """``module.__all__`` is exactly ``names`` (in any order) and every name resolves; each
    registry name in ``registers`` is a verifier the module exports, named so."""
    from verifiers.registry import get_verifier

    assert sorted(module.__all__) == sorted(names), module.__name__
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing, f"{module.__name__} exports names it does not define: {missing}"
    for name in registers:
        cls = get_verifier(name)
        assert cls.name == name, (name, cls)
        assert getattr(module, cls.__name__, None) is cls, f"{module.__name__} lacks {cls}"


def heavy_imports(modules: Iterable[str], heavy: Iterable[str]) -> list[str]:
    """The modules of ``heavy`` that a fresh interpreter has loaded after importing ``modules``."""
    names = list(modules)
    for name in names:  # a typo fails here, not as "nothing heavy loaded"
        assert importlib.util.find_spec(name) is not None, name
    code = (
        f"import sys, {', '.join(names)}; "
        f"print(','.join(m for m in {sorted(heavy)!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [name for name in out.stdout.strip().split(",") if name]
