"""Make a source checkout's ``verifiers/`` whole when Python imports it straight from disk.

setuptools maps ``domains/``, ``sandbox/``, ``rl_adapters/`` (and ``datasets/``) into the
``verifiers`` namespace (``package-dir`` in pyproject.toml). An installed wheel has them inside
``verifiers/``; the source tree does not. So a REPL, notebook or ``python -c`` started at the
repository root (where ``''`` on ``sys.path`` finds the source ``verifiers/`` before the
installed one) used to import a core without domains, and every domain verifier failed with
"No module named 'verifiers.domains'". When this package is loaded from such a checkout, a
meta-path finder maps the three code subpackages to their sibling folders, exactly as package-dir
does; installed packages never trigger it (their ``verifiers/`` holds the subpackages).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

__all__ = ["install_if_source_checkout"]

# The same mapping as [tool.setuptools.package-dir] in pyproject.toml.
_MAPPED = {
    "verifiers.domains": "domains",
    "verifiers.sandbox": "sandbox",
    "verifiers.rl_adapters": "rl_adapters",
}
# Not verifiers._data: verifiers.data already falls back to the checkout's datasets/ when the
# package is missing, and a hand-made namespace spec breaks importlib.resources.


class _SiblingFinder(importlib.abc.MetaPathFinder):
    """Finds the mapped subpackages in the checkout's sibling folders (and nothing else)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        folder_name = _MAPPED.get(fullname)
        if folder_name is None:
            return None
        folder = self.root / folder_name
        init = folder / "__init__.py"
        if init.is_file():
            return importlib.util.spec_from_file_location(
                fullname, init, submodule_search_locations=[str(folder)]
            )
        return None


def install_if_source_checkout(package_dir: Path) -> bool:
    """Add the finder when ``package_dir`` is a checkout's ``verifiers/``; True if added."""
    root = package_dir.parent
    if (package_dir / "domains").exists() or not (root / "pyproject.toml").is_file():
        return False
    if not all((root / name / "__init__.py").is_file() for name in ("domains", "sandbox")):
        return False
    if not any(isinstance(f, _SiblingFinder) for f in sys.meta_path):
        sys.meta_path.append(_SiblingFinder(root))
    return True
